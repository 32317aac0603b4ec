// SPDX-License-Identifier: BSL-1.0
#pragma once

// Helpers shared by outbox_store_suite.hpp and inbox_store_suite.hpp. Private.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>
#include <letterbox/testing/detail/describe.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
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

} // namespace letterbox::testing::detail::store_suite
