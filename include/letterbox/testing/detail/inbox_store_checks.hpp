// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the inbox_store conformance suite, one function template each, so that
// tests/archetypes can instantiate them with `inbox_store_archetype`. Included by
// letterbox/testing/inbox_store_suite.hpp.

#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/seed.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

namespace store_suite {

template <inbox_store Store>
bool recorded(inbox_store_harness<Store>& h, std::string_view consumer, const message_id& id) {
    std::error_code ec;
    const bool found = h.store.contains(consumer, id, ec);
    REQUIRE(describe(ec) == success);
    return found;
}

template <inbox_store Store>
std::size_t size_of(inbox_store_harness<Store>& h) {
    std::error_code ec;
    const auto n = h.store.size(ec);
    REQUIRE(describe(ec) == success);
    return n;
}

/// Stages the record of (`consumer`, `id`) in `unit`, which must succeed.
template <inbox_store Store>
void stage_record(inbox_store_harness<Store>& h, typename Store::unit_of_work_type& unit,
                  std::string_view consumer, const message_id& id, store_time now) {
    REQUIRE(describe(h.store.try_record(unit, consumer, id, now)) == success);
}

template <inbox_store Store>
void record_committed(inbox_store_harness<Store>& h, std::string_view consumer,
                      const message_id& id, store_time now) {
    auto u = h.begin();
    stage_record(h, u, consumer, id, now);
    commit_unit(u);
}

} // namespace store_suite

/// Runs `check` against a fresh context of `Fixture`.
template <class Fixture>
void run_inbox_store_check(
    void (*check)(inbox_store_harness<store_suite::fixture_store_t<Fixture>>&)) {
    store_suite::run_check<Fixture>(check);
}

template <inbox_store Store>
void inbox_check_first_record_wins(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{201};
    const auto id = ids();
    CHECK(size_of(h) == 0);
    CHECK_FALSE(recorded(h, "billing", id));

    auto u = h.begin();
    stage_record(h, u, "billing", id, t0);
    if (h.features.overlapping_units_of_work) {
        CHECK_FALSE(recorded(h, "billing", id)); // not before commit
        CHECK(size_of(h) == 0);
    }
    commit_unit(u);
    CHECK(recorded(h, "billing", id));
    CHECK(size_of(h) == 1);
}

template <inbox_store Store>
void inbox_check_duplicate_after_commit(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{202};
    const auto id = ids();
    const auto other = ids();
    record_committed(h, "billing", id, t0);

    auto u = h.begin();
    CHECK(describe(h.store.try_record(u, "billing", id, t0 + 1s)) ==
          describe(errc::already_processed));
    // The unit stays usable for other writes.
    stage_record(h, u, "billing", other, t0 + 1s);
    commit_unit(u);
    CHECK(recorded(h, "billing", other));
    CHECK(size_of(h) == 2);
}

template <inbox_store Store>
void inbox_check_duplicate_within_unit(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{203};
    const auto id = ids();

    auto u = h.begin();
    stage_record(h, u, "billing", id, t0);
    CHECK(describe(h.store.try_record(u, "billing", id, t0)) == describe(errc::already_processed));
    commit_unit(u);
    CHECK(recorded(h, "billing", id));
    CHECK(size_of(h) == 1);
}

/// Group commit (docs/group-commit.md): several messages in one unit, each in a savepoint. A
/// record rolled back to its savepoint is gone and its key is new again; the released ones
/// commit with the unit. Only for units with savepoints (`savepoint_unit_of_work`).
template <inbox_store Store>
void inbox_check_savepoints_keep_or_discard_records(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    using unit = typename Store::unit_of_work_type;
    if constexpr (savepoint_unit_of_work<unit>) {
        message_id_generator ids{213};
        const auto kept = ids();
        const auto dropped = ids();
        auto u = h.begin();
        REQUIRE(describe(u.savepoint()) == success);
        stage_record(h, u, "billing", kept, t0);
        REQUIRE(describe(u.release_savepoint()) == success);
        REQUIRE(describe(u.savepoint()) == success);
        stage_record(h, u, "billing", dropped, t0);
        REQUIRE(describe(u.rollback_to_savepoint()) == success);
        // A duplicate of a released record is found within the unit, and rolled back alone.
        REQUIRE(describe(u.savepoint()) == success);
        CHECK(describe(h.store.try_record(u, "billing", kept, t0)) ==
              describe(errc::already_processed));
        REQUIRE(describe(u.rollback_to_savepoint()) == success);
        commit_unit(u);
        CHECK(recorded(h, "billing", kept));
        CHECK_FALSE(recorded(h, "billing", dropped));
        CHECK(size_of(h) == 1);
        record_committed(h, "billing", dropped, t0); // new again
        CHECK(size_of(h) == 2);
    } else {
        CHECK_FALSE(savepoint_unit_of_work<unit>); // nothing to check: it commits on its own
    }
}

template <inbox_store Store>
void inbox_check_overlapping_units_one_commits(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    if (!h.features.overlapping_units_of_work) {
        WARN("no overlapping units of work: checked by the [threads] case only");
        return;
    }
    message_id_generator ids{204};
    const auto id = ids();
    const auto side = ids();

    auto u1 = h.begin();
    auto u2 = h.begin();
    stage_record(h, u1, "billing", id, t0);
    stage_record(h, u2, "audit", side, t0);
    const auto second = describe(h.store.try_record(u2, "billing", id, t0));
    REQUIRE((second == success || second == describe(errc::already_processed)));
    commit_unit(u1);
    if (second == success) {
        // The unique key decides at commit, and the loser applies none of its writes.
        CHECK(describe(u2.commit()) == describe(errc::already_processed));
        CHECK_FALSE(recorded(h, "audit", side));
        CHECK(size_of(h) == 1);
    }
    CHECK(recorded(h, "billing", id));
}

template <inbox_store Store>
void inbox_check_concurrent_threads_one_commits(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{205};
    enum class outcome { committed, duplicate_at_record, duplicate_at_commit, error };

    for (int round = 0; round < 50; ++round) {
        INFO("round " << round);
        const auto id = ids();
        std::latch start(2);
        outcome outcomes[2] = {outcome::error, outcome::error};
        std::string errors[2];
        auto consumer = [&](int who) {
            start.arrive_and_wait();
            auto u = h.begin();
            // A write of this delivery only, to see that the loser applies nothing.
            const auto side_ec = h.store.try_record(u, "side-" + std::to_string(who), id, t0);
            const auto ec = h.store.try_record(u, "billing", id, t0);
            if (side_ec) {
                errors[who] = "side record: " + describe(side_ec);
            } else if (ec == errc::already_processed) {
                if (const auto r = u.rollback())
                    errors[who] = "rollback: " + describe(r);
                outcomes[who] = outcome::duplicate_at_record;
            } else if (ec) {
                errors[who] = "try_record: " + describe(ec);
            } else {
                const auto c = u.commit();
                if (!c)
                    outcomes[who] = outcome::committed;
                else if (c == errc::already_processed)
                    outcomes[who] = outcome::duplicate_at_commit;
                else
                    errors[who] = "commit: " + describe(c);
            }
        };
        std::thread a(consumer, 0);
        std::thread b(consumer, 1);
        a.join();
        b.join();
        CHECK(errors[0].empty());
        CHECK(errors[1].empty());
        INFO(errors[0] << errors[1]);
        REQUIRE((outcomes[0] == outcome::committed) != (outcomes[1] == outcome::committed));
        const int winner = outcomes[0] == outcome::committed ? 0 : 1;
        const int loser = 1 - winner;
        CHECK(outcomes[loser] != outcome::error);
        CHECK(recorded(h, "billing", id));
        CHECK(recorded(h, "side-" + std::to_string(winner), id));
        CHECK_FALSE(recorded(h, "side-" + std::to_string(loser), id));
    }
    CHECK(size_of(h) == 100);
}

template <inbox_store Store>
void inbox_check_rollback_removes_record(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{206};
    const auto id = ids();
    {
        auto u = h.begin();
        stage_record(h, u, "billing", id, t0);
        roll_back_unit(u);
    }
    CHECK_FALSE(recorded(h, "billing", id));
    {
        auto u = h.begin(); // destroyed unfinished: rolled back
        stage_record(h, u, "billing", id, t0);
    }
    CHECK_FALSE(recorded(h, "billing", id));
    CHECK(size_of(h) == 0);
    // The message counts as new again.
    record_committed(h, "billing", id, t0);
    CHECK(recorded(h, "billing", id));
}

template <inbox_store Store>
void inbox_check_finished_unit_of_work_is_closed(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{207};
    const auto id = ids();
    auto u = h.begin();
    commit_unit(u);
    CHECK(describe(h.store.try_record(u, "billing", id, t0)) == describe(errc::transaction_closed));
    CHECK_FALSE(recorded(h, "billing", id));
    CHECK(describe(u.commit()) == describe(errc::transaction_closed));
}

template <inbox_store Store>
void inbox_check_keys_are_per_consumer(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{208};
    const auto id = ids();
    record_committed(h, "billing", id, t0);
    CHECK_FALSE(recorded(h, "shipping", id));
    record_committed(h, "shipping", id, t0);
    CHECK(recorded(h, "billing", id));
    CHECK(recorded(h, "shipping", id));
    CHECK(size_of(h) == 2);
}

/// The nil id is what every message published without an AMQP message-id carries: a store
/// that recorded it would take each such message after the first for a duplicate and drop its
/// effect.
template <inbox_store Store>
void inbox_check_nil_id_is_refused(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{210};
    const message_id nil{};
    for (int copy = 0; copy < 3; ++copy) {
        INFO("id-less message " << copy);
        const auto id = ids();
        auto u = h.begin();
        CHECK(describe(h.store.try_record(u, "billing", nil, t0)) ==
              describe(errc::missing_idempotency_key));
        // The unit stays usable, and nothing of the nil id is committed with it.
        stage_record(h, u, "billing", id, t0);
        commit_unit(u);
        CHECK(recorded(h, "billing", id));
        CHECK_FALSE(recorded(h, "billing", nil));
    }
    CHECK(size_of(h) == 3);
}

template <inbox_store Store>
void inbox_check_purge_by_age(inbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{209};
    const auto old_id = ids();
    const auto mid_id = ids();
    const auto new_id = ids();
    record_committed(h, "billing", old_id, t0);
    record_committed(h, "billing", mid_id, t0 + 1h);
    record_committed(h, "billing", new_id, t0 + 2h);

    std::error_code ec;
    CHECK(h.store.purge(t0 + 1h, ec) == 1); // strictly before
    CHECK(describe(ec) == success);
    CHECK_FALSE(recorded(h, "billing", old_id));
    CHECK(recorded(h, "billing", mid_id));
    CHECK(recorded(h, "billing", new_id));
    CHECK(h.store.purge(t0 + 1h, ec) == 0);
    CHECK(size_of(h) == 2);
    // A purged key counts as new again: that is why retention must exceed redelivery.
    record_committed(h, "billing", old_id, t0 + 3h);
    CHECK(h.store.purge(t0 + 2h + 1s, ec) == 2);
    CHECK(recorded(h, "billing", old_id));
    CHECK(size_of(h) == 1);
}

/// Delivers random keys several times each, in random order, failing (rolling back) some
/// deliveries and redelivering them later, through an idempotent consumer whose effect runs
/// on commit; each key must end with exactly one record and one effect.
template <inbox_store Store>
void inbox_check_random_deliveries_record_once(inbox_store_harness<Store>& h, std::uint64_t seed) {
    using namespace store_suite;
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    message_id_generator ids{seed};
    const std::string consumers[] = {"billing", "shipping", "audit"};

    struct key {
        std::string consumer;
        message_id id;
    };
    std::vector<key> keys;
    std::vector<std::size_t> deliveries;
    const auto messages = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int m = 0; m < messages; ++m) {
        const auto id = ids();
        for (const auto& c : consumers) {
            if (std::bernoulli_distribution(0.7)(rng)) {
                keys.push_back({c, id});
                const auto copies = std::uniform_int_distribution<int>(1, 4)(rng);
                for (int i = 0; i < copies; ++i)
                    deliveries.push_back(keys.size() - 1);
            }
        }
    }
    std::shuffle(deliveries.begin(), deliveries.end(), rng);

    const auto before = size_of(h);
    std::vector<int> effects(keys.size(), 0);
    auto now = t0;
    for (std::size_t step = 0; step < deliveries.size(); ++step) {
        REQUIRE(step < 10000);
        const auto k = deliveries[step];
        now += std::chrono::milliseconds(1);
        auto u = h.begin();
        const auto ec = h.store.try_record(u, keys[k].consumer, keys[k].id, now);
        if (ec == errc::already_processed) {
            roll_back_unit(u); // ack the duplicate, no effect
            continue;
        }
        REQUIRE(describe(ec) == success);
        REQUIRE(describe(u.on_commit([&effects, k] { ++effects[k]; })) == success);
        if (std::bernoulli_distribution(0.25)(rng)) {
            // The handler failed: nothing happened, and the broker redelivers later.
            roll_back_unit(u);
            const auto later =
                std::uniform_int_distribution<std::size_t>(step + 1, deliveries.size())(rng);
            deliveries.insert(deliveries.begin() + static_cast<std::ptrdiff_t>(later), k);
            continue;
        }
        commit_unit(u);
    }
    for (std::size_t k = 0; k < keys.size(); ++k) {
        INFO("key " << k << " consumer " << keys[k].consumer);
        CHECK(effects[k] == 1);
        CHECK(recorded(h, keys[k].consumer, keys[k].id));
    }
    CHECK(size_of(h) == before + keys.size());
}

/// `inbox_check_random_deliveries_record_once` for 20 seeds derived from the process seed
/// (`LETTERBOX_SEED` replays them).
template <inbox_store Store>
void inbox_check_random_deliveries_record_once_seeded(inbox_store_harness<Store>& h) {
    std::mt19937_64 seeds(derive_seed(test_seed(), "inbox_store_suite"));
    for (int run = 0; run < 20; ++run)
        inbox_check_random_deliveries_record_once(h, seeds());
}

} // namespace letterbox::testing::detail
