// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the checkpoint_store conformance suite, one function template each, so that
// tests/archetypes can instantiate them with `checkpoint_store_archetype`. Included by
// letterbox/testing/checkpoint_store_suite.hpp.

#include <letterbox/concepts/checkpoint_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/testing/checkpoint_store_suite.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <latch>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

namespace store_suite {

/// The committed checkpoint of `name`.
template <checkpoint_store Store>
std::uint64_t position_of(checkpoint_store_harness<Store>& h, std::string_view name) {
    std::error_code ec;
    const auto p = h.store.position(name, ec);
    REQUIRE(describe(ec) == success);
    return p;
}

/// Moves `name` from `expected` to `position` in a unit of its own, which must commit.
template <checkpoint_store Store>
void save_checkpoint_committed(checkpoint_store_harness<Store>& h, std::string_view name,
                               std::uint64_t expected, std::uint64_t position) {
    auto u = h.begin();
    REQUIRE(describe(h.store.save(u, name, expected, position)) == success);
    commit_unit(u);
}

/// Moves `name` from `expected` to `position` in a unit of its own, then commits. A conflict
/// from the save rolls the unit back.
template <checkpoint_store Store>
write_outcome save_checkpoint_and_commit(checkpoint_store_harness<Store>& h, std::string_view name,
                                         std::uint64_t expected, std::uint64_t position,
                                         std::string* error = nullptr) {
    auto u = h.begin();
    return finish_write(u, h.store.save(u, name, expected, position), error);
}

/// Whether a move of `name` from `expected` in a unit of its own ends in a conflict, at the
/// save or at the commit.
template <checkpoint_store Store>
bool save_conflicts(checkpoint_store_harness<Store>& h, std::string_view name,
                    std::uint64_t expected, std::uint64_t position) {
    std::string error;
    const auto outcome = save_checkpoint_and_commit(h, name, expected, position, &error);
    INFO(error);
    CHECK(outcome != write_outcome::error);
    return outcome == write_outcome::conflict_at_write ||
           outcome == write_outcome::conflict_at_commit;
}

} // namespace store_suite

/// Runs `check` against a fresh context of `Fixture`.
template <class Fixture>
void run_checkpoint_store_check(
    void (*check)(checkpoint_store_harness<store_suite::fixture_store_t<Fixture>>&)) {
    store_suite::run_check<Fixture>(check);
}

template <checkpoint_store Store>
void checkpoint_check_zero_when_none(checkpoint_store_harness<Store>& h) {
    using namespace store_suite;
    CHECK(position_of(h, "balances") == 0);
    CHECK(position_of(h, "statements") == 0);
    save_checkpoint_committed(h, "balances", 0, 4);
    CHECK(position_of(h, "statements") == 0);
    CHECK(position_of(h, "balance") == 0); // names are whole, never prefixes
    CHECK(position_of(h, "balances-2") == 0);
}

template <checkpoint_store Store>
void checkpoint_check_save_then_read(checkpoint_store_harness<Store>& h) {
    using namespace store_suite;
    auto u = h.begin();
    REQUIRE(describe(h.store.save(u, "balances", 0, 5)) == success);
    if (h.features.overlapping_units_of_work)
        CHECK(position_of(h, "balances") == 0); // not before commit
    commit_unit(u);
    CHECK(position_of(h, "balances") == 5);
    CHECK(position_of(h, "statements") == 0);

    save_checkpoint_committed(h, "balances", 5, 9);
    CHECK(position_of(h, "balances") == 9);
    save_checkpoint_committed(h, "statements", 0, 2);
    CHECK(position_of(h, "balances") == 9);
    CHECK(position_of(h, "statements") == 2);
    // A save that does not move it is allowed (a page without events for the projection).
    save_checkpoint_committed(h, "balances", 9, 9);
    CHECK(position_of(h, "balances") == 9);
}

template <checkpoint_store Store>
void checkpoint_check_stale_save_conflicts(checkpoint_store_harness<Store>& h) {
    using namespace store_suite;
    // Two runners read 0; the first moves the checkpoint to 5 and commits.
    save_checkpoint_committed(h, "balances", 0, 5);

    // The second: its read-model update and its checkpoint never apply.
    auto u = h.begin();
    REQUIRE(describe(h.store.save(u, "statements", 0, 3)) == success);
    const auto ec = h.store.save(u, "balances", 0, 7);
    if (ec) {
        CHECK(describe(ec) == describe(errc::concurrency_conflict));
        commit_unit(u); // nothing staged, the unit usable: its other save commits
        CHECK(position_of(h, "statements") == 3);
    } else {
        CHECK(describe(u.commit()) == describe(errc::concurrency_conflict));
        CHECK(position_of(h, "statements") == 0); // the loser applies none of its writes
    }
    CHECK(position_of(h, "balances") == 5);

    // Any other position than the one stored is stale: behind it or ahead of it.
    CHECK(save_conflicts(h, "balances", 4, 8));
    CHECK(save_conflicts(h, "balances", 6, 8));
    CHECK(save_conflicts(h, "nobody", 5, 8)); // no checkpoint is 0
    CHECK(position_of(h, "balances") == 5);
    CHECK(position_of(h, "nobody") == 0);
}

template <checkpoint_store Store>
void checkpoint_check_back_to_zero(checkpoint_store_harness<Store>& h) {
    using namespace store_suite;
    save_checkpoint_committed(h, "balances", 0, 5);
    // A rebuild moves it back to 0, from where it was.
    CHECK(save_conflicts(h, "balances", 4, 0));
    save_checkpoint_committed(h, "balances", 5, 0);
    CHECK(position_of(h, "balances") == 0);
    // At 0 again, as if it never had one: a move from 5 is stale, a move from 0 is not.
    CHECK(save_conflicts(h, "balances", 5, 6));
    save_checkpoint_committed(h, "balances", 0, 3);
    CHECK(position_of(h, "balances") == 3);
    CHECK(save_conflicts(h, "balances", 0, 4));

    // A projection without a checkpoint saved at 0, then moved on.
    save_checkpoint_committed(h, "statements", 0, 0);
    CHECK(position_of(h, "statements") == 0);
    save_checkpoint_committed(h, "statements", 0, 4);
    CHECK(position_of(h, "statements") == 4);
}

template <checkpoint_store Store>
void checkpoint_check_rollback_leaves_no_trace(checkpoint_store_harness<Store>& h) {
    using namespace store_suite;
    save_checkpoint_committed(h, "balances", 0, 5);
    {
        auto u = h.begin();
        REQUIRE(describe(h.store.save(u, "balances", 5, 9)) == success);
        REQUIRE(describe(h.store.save(u, "statements", 0, 2)) == success);
        roll_back_unit(u);
    }
    {
        auto u = h.begin(); // destroyed unfinished: rolled back
        REQUIRE(describe(h.store.save(u, "balances", 5, 7)) == success);
        REQUIRE(describe(h.store.save(u, "statements", 0, 1)) == success);
    }
    CHECK(position_of(h, "balances") == 5);
    CHECK(position_of(h, "statements") == 0);
    // The positions read before still hold.
    save_checkpoint_committed(h, "balances", 5, 6);
    save_checkpoint_committed(h, "statements", 0, 1);
    CHECK(position_of(h, "balances") == 6);
    CHECK(position_of(h, "statements") == 1);
}

template <checkpoint_store Store>
void checkpoint_check_invalid_saves_refused(checkpoint_store_harness<Store>& h) {
    using namespace store_suite;
    auto u = h.begin();
    CHECK(describe(h.store.save(u, "", 0, 1)) == describe(errc::invalid_argument));
    // Nothing was staged, and the unit stays usable: its valid save commits.
    REQUIRE(describe(h.store.save(u, "balances", 0, 1)) == success);
    commit_unit(u);
    CHECK(position_of(h, "balances") == 1);
    CHECK(position_of(h, "") == 0);
    // A finished unit refuses saves.
    CHECK(describe(h.store.save(u, "balances", 1, 2)) == describe(errc::transaction_closed));
    CHECK(position_of(h, "balances") == 1);
}

template <checkpoint_store Store>
void checkpoint_check_overlapping_saves_one_commits(checkpoint_store_harness<Store>& h) {
    using namespace store_suite;
    if (!h.features.overlapping_units_of_work) {
        WARN("no overlapping units of work: checked by the [threads] cases only");
        return;
    }
    save_checkpoint_committed(h, "balances", 0, 5);
    auto u1 = h.begin();
    auto u2 = h.begin();
    REQUIRE(describe(h.store.save(u1, "balances", 5, 7)) == success);
    REQUIRE(describe(h.store.save(u2, "statements", 0, 3)) == success);
    const auto second = describe(h.store.save(u2, "balances", 5, 8));
    REQUIRE((second == success || second == describe(errc::concurrency_conflict)));
    commit_unit(u1);
    if (second == success) {
        // The position decides at commit, and the loser applies none of its writes.
        CHECK(describe(u2.commit()) == describe(errc::concurrency_conflict));
        CHECK(position_of(h, "statements") == 0);
    }
    CHECK(position_of(h, "balances") == 7);
}

template <checkpoint_store Store>
void checkpoint_check_concurrent_saves_one_commits(checkpoint_store_harness<Store>& h) {
    using namespace store_suite;
    std::uint64_t at = 0; // the first round races from no checkpoint
    for (std::uint64_t round = 0; round < 25; ++round) {
        INFO("round " << round);
        std::latch read_both(2);
        const int winner = race_two_writers([&](int who, std::string& error) {
            std::error_code ec;
            const auto read = h.store.position("balances", ec);
            read_both.arrive_and_wait(); // both read the checkpoint before either moves it
            if (ec || read != at) {
                error = "position: " + describe(ec) + " " + std::to_string(read);
                return write_outcome::error;
            }
            const auto to = 10 * (round + 1) + static_cast<std::uint64_t>(who);
            return save_checkpoint_and_commit(h, "balances", read, to, &error);
        });
        at = 10 * (round + 1) + static_cast<std::uint64_t>(winner);
        REQUIRE(position_of(h, "balances") == at);
    }
}

} // namespace letterbox::testing::detail
