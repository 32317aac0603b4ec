// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the saga_store conformance suite about concurrent writers: what a store that
// never raises a conflict fails (NServiceBus#4150), and what two instances started for one
// business key would break (MassTransit#1959). Included by letterbox/testing/saga_store_suite.hpp.

#include <letterbox/concepts/saga_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/saga_instance.hpp>
#include <letterbox/testing/detail/saga_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/saga_store_suite.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <latch>
#include <string>
#include <thread>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <saga_store Store>
void saga_check_overlapping_updates_one_commits(saga_store_harness<Store>& h) {
    using namespace store_suite;
    if (!h.features.overlapping_units_of_work) {
        WARN("no overlapping units of work: checked by the [threads] cases only");
        return;
    }
    insert_committed(h, new_instance("s-1", "order-1"));
    const auto v1 = found(h, "s-1");
    REQUIRE(v1);
    auto a = *v1;
    a.state = "a";
    auto b = *v1;
    b.state = "b";

    auto u1 = h.begin();
    auto u2 = h.begin();
    REQUIRE(describe(h.store.update(u1, a)) == success);
    REQUIRE(describe(h.store.insert(u2, new_instance("s-2", "order-2"))) == success);
    const auto second = describe(h.store.update(u2, b));
    REQUIRE((second == success || second == describe(errc::concurrency_conflict)));
    commit_unit(u1);
    if (second == success) {
        // The version decides at commit, and the loser applies none of its writes.
        CHECK(describe(u2.commit()) == describe(errc::concurrency_conflict));
        CHECK_FALSE(found(h, "s-2"));
    }
    const auto now = found(h, "s-1");
    REQUIRE(now);
    CHECK(now->state == "a");
    CHECK(now->version == 2);
}

template <saga_store Store>
void saga_check_concurrent_updates_one_commits(saga_store_harness<Store>& h) {
    using namespace store_suite;
    for (int round = 0; round < 25; ++round) {
        INFO("round " << round);
        const auto id = "s-" + std::to_string(round);
        insert_committed(h, new_instance(id, "order-" + std::to_string(round)));
        std::latch read_both(2);
        const int winner = race_two_writers([&](int who, std::string& error) {
            std::error_code ec;
            auto read = h.store.find("order", id, ec);
            read_both.arrive_and_wait(); // both read version 1 before either writes
            if (ec || !read) {
                error = "find: " + describe(ec);
                return write_outcome::error;
            }
            read->state = "writer-" + std::to_string(who);
            return write_and_commit(h, *read, &error);
        });
        const auto now = found(h, id);
        REQUIRE(now);
        CHECK(now->state == "writer-" + std::to_string(winner));
        CHECK(now->version == 2);
    }
}

template <saga_store Store>
void saga_check_concurrent_starts_one_commits(saga_store_harness<Store>& h) {
    using namespace store_suite;
    for (int round = 0; round < 25; ++round) {
        INFO("round " << round);
        const auto correlation = "order-" + std::to_string(round);
        std::latch start(2);
        const int winner = race_two_writers([&](int who, std::string& error) {
            const auto instance =
                new_instance(std::to_string(round) + "-" + std::to_string(who), correlation);
            start.arrive_and_wait();
            return write_and_commit(h, instance, &error);
        });
        std::error_code ec;
        const auto now = h.store.find_by_correlation("order", correlation, ec);
        REQUIRE(now);
        CHECK(now->id == std::to_string(round) + "-" + std::to_string(winner));
        CHECK_FALSE(found(h, std::to_string(round) + "-" + std::to_string(1 - winner)));
    }
    CHECK(saga_count(h) == 25);
}

/// Four writers each add 1 to a counter in the instance's data 25 times, re-reading and
/// retrying on a conflict (what the saga layer does with the message). A store that lets a
/// stale write through loses increments.
template <saga_store Store>
void saga_check_concurrent_increments_lose_nothing(saga_store_harness<Store>& h) {
    using namespace store_suite;
    constexpr int writers = 4;
    constexpr int increments = 25;
    constexpr int max_attempts = 100 * writers * increments; // bounded
    auto start = new_instance("counter", "order-1");
    start.data = "0";
    insert_committed(h, start);

    std::latch ready(writers);
    std::array<std::string, writers> errors;
    auto writer = [&](int who) {
        ready.arrive_and_wait();
        int done = 0;
        for (int attempt = 0; done < increments && attempt < max_attempts; ++attempt) {
            std::error_code ec;
            auto read = h.store.find("order", "counter", ec);
            if (ec || !read) {
                errors[who] = "find: " + describe(ec);
                return;
            }
            read->data = std::to_string(std::stoi(read->data) + 1);
            const auto outcome = write_and_commit(h, *read, &errors[who]);
            if (outcome == write_outcome::error)
                return;
            if (outcome == write_outcome::committed)
                ++done;
        }
        if (done < increments)
            errors[who] = "gave up after " + std::to_string(max_attempts) + " attempts";
    };
    std::vector<std::thread> threads;
    for (int who = 0; who < writers; ++who)
        threads.emplace_back(writer, who);
    for (auto& t : threads)
        t.join();
    for (const auto& e : errors)
        CHECK(e.empty());
    const auto now = found(h, "counter");
    REQUIRE(now);
    CHECK(now->data == std::to_string(writers * increments));
    CHECK(now->version == 1 + writers * increments);
}

} // namespace letterbox::testing::detail
