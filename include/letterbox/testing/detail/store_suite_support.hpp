// SPDX-License-Identifier: BSL-1.0
#pragma once

// Helpers shared by outbox_store_suite.hpp and inbox_store_suite.hpp. Private.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>
#include <letterbox/testing/detail/describe.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail::store_suite {

using namespace std::chrono_literals;

using letterbox::testing::detail::describe;
using letterbox::testing::detail::success;

/// The instant every check starts at: fixed, and on whole seconds, so that stores keeping
/// milliseconds round-trip it.
inline constexpr store_time t0{std::chrono::sys_days{std::chrono::year{2024} / 1 / 1}};

/// Commits `unit`, which must succeed.
template <class UnitOfWork>
void commit_unit(UnitOfWork& unit) {
    REQUIRE(describe(unit.commit()) == success);
}

/// Rolls `unit` back, which must succeed.
template <class UnitOfWork>
void roll_back_unit(UnitOfWork& unit) {
    REQUIRE(describe(unit.rollback()) == success);
}

/// The store type of a fixture's context.
template <class Fixture>
using fixture_store_t =
    std::remove_reference_t<decltype(std::declval<decltype(Fixture::make())&>().store())>;

/// `Fixture::features` if it declares them, else the defaults.
template <class Fixture, class Features>
constexpr Features features_of() {
    if constexpr (requires { Features{Fixture::features}; })
        return Features{Fixture::features};
    else
        return Features{};
}

/// Runs `check` against a fresh context of `Fixture`, in the harness `check` takes.
template <class Fixture, class Harness>
void run_check(void (*check)(Harness&)) {
    auto ctx = Fixture::make();
    Harness h{{ctx.store(), [&ctx] { return ctx.begin(); },
               features_of<Fixture, decltype(Harness::features)>()}};
    check(h);
}

/// How a write of a unit of its own ended.
enum class write_outcome { committed, conflict_at_write, conflict_at_commit, error };

/// Ends `unit`, whose one write returned `written`: a conflict rolls it back, success commits
/// it. Says how the write ended, and describes an unexpected failure in `error`.
template <class UnitOfWork>
write_outcome finish_write(UnitOfWork& unit, std::error_code written, std::string* error) {
    if (written == errc::concurrency_conflict) {
        if (const auto r = unit.rollback(); r && error)
            *error = "rollback: " + describe(r);
        return write_outcome::conflict_at_write;
    }
    if (written) {
        if (error)
            *error = "write: " + describe(written);
        return write_outcome::error;
    }
    const auto c = unit.commit();
    if (!c)
        return write_outcome::committed;
    if (c == errc::concurrency_conflict)
        return write_outcome::conflict_at_commit;
    if (error)
        *error = "commit: " + describe(c);
    return write_outcome::error;
}

/// Runs `write(who, error)` on two threads at once (`who` 0 and 1; it returns how its write
/// ended and may describe a failure in `error`), then checks that neither failed otherwise and
/// that exactly one committed. Returns which one.
template <class Write>
int race_two_writers(Write write) {
    std::array<write_outcome, 2> outcomes{write_outcome::error, write_outcome::error};
    std::array<std::string, 2> errors;
    auto run = [&](int who) {
        outcomes[who] = write(who, errors[who]);
    };
    std::thread a(run, 0);
    std::thread b(run, 1);
    a.join();
    b.join();
    CHECK(errors[0].empty());
    CHECK(errors[1].empty());
    INFO(errors[0] << errors[1]);
    REQUIRE((outcomes[0] == write_outcome::committed) != (outcomes[1] == write_outcome::committed));
    const int winner = outcomes[0] == write_outcome::committed ? 0 : 1;
    CHECK(outcomes[1 - winner] != write_outcome::error);
    return winner;
}

} // namespace letterbox::testing::detail::store_suite
