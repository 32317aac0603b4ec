// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the outbox_store conformance suite about claiming: creation order, the next attempt
// time, leases and their expiry, per-aggregate order, and concurrent claimers. Included by
// letterbox/testing/detail/outbox_store_checks.hpp, which holds the helpers they share;
// outbox_store_suite.hpp lists them in LETTERBOX_OUTBOX_STORE_SUITE.

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/outbox_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <outbox_store Store>
void outbox_check_claim_returns_creation_order(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{106};
    std::vector<outbox_entry> first, second;
    for (int i = 0; i < 3; ++i)
        first.push_back(outbox_event(ids, "log", ""));
    for (int i = 0; i < 2; ++i)
        second.push_back(outbox_event(ids, "log", ""));
    add_committed(h, first, t0);
    add_committed(h, second, t0);

    std::error_code ec;
    auto batch = h.store.claim("relay-a", 3, 30s, t0, ec);
    REQUIRE(describe(ec) == success);
    REQUIRE(batch.size() == 3);
    for (std::size_t i = 0; i < 3; ++i)
        CHECK(batch[i].msg.id == first[i].msg.id);
    CHECK(batch[0].sequence < batch[1].sequence);
    CHECK(batch[1].sequence < batch[2].sequence);

    // Rows leased already are not handed out again, even to their owner.
    auto rest = h.store.claim("relay-a", 3, 30s, t0, ec);
    REQUIRE(describe(ec) == success);
    REQUIRE(rest.size() == 2);
    CHECK(rest[0].msg.id == second[0].msg.id);
    CHECK(rest[1].msg.id == second[1].msg.id);
    CHECK(batch[2].sequence < rest[0].sequence);
    CHECK(claim_ids(h, "relay-a", 3, 30s, t0).empty());
    CHECK(claim_ids(h, "relay-b", 0, 30s, t0 + 1h).empty()); // max_rows 0: nothing
}

template <outbox_store Store>
void outbox_check_claim_honours_next_attempt_time(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{107};
    const auto e = outbox_event(ids, "order", "1");
    add_committed(h, {e}, t0);
    // A row added "in the future" is not due yet either.
    const auto later = outbox_event(ids, "log", "");
    add_committed(h, {later}, t0 + 1h);

    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0) == ids_of({&e}));
    fail_row(h, e.msg.id, "relay-a", "broker down", t0 + 10s, 5, t0 + 1s);
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 5s).empty());
    REQUIRE(claim_ids(h, "relay-b", 10, 30s, t0 + 10s) == ids_of({&e}));
    publish_row(h, e.msg.id, "relay-b", t0 + 11s);
    CHECK(claim_ids(h, "relay-c", 10, 30s, t0 + 59min).empty());
    CHECK(claim_ids(h, "relay-c", 10, 30s, t0 + 1h) == ids_of({&later}));
}

template <outbox_store Store>
void outbox_check_lease_excludes_other_owners(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{108};
    const auto e = outbox_event(ids, "order", "1");
    add_committed(h, {e}, t0);

    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0) == ids_of({&e}));
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 10s).empty());
    CHECK(claim_ids(h, "relay-a", 10, 30s, t0 + 10s).empty());
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 29s).empty());
    CHECK(stats_at(h, t0 + 10s).leased == 1);

    // The lease ends at t0 + 30s: an expired lease is taken over by claim itself.
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 30s) == ids_of({&e}));
    const auto row = find_row(h, e.msg.id);
    CHECK(row.lease_owner == "relay-b");
    CHECK(row.lease_expires_at == t0 + 60s);
    CHECK(describe(h.store.mark_published(e.msg.id, "relay-a", t0 + 31s)) ==
          describe(errc::lease_lost));
    CHECK(describe(h.store.mark_published(e.msg.id, "relay-b", t0 + 31s)) == success);
}

template <outbox_store Store>
void outbox_check_release_expired_leases(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{109};
    const auto [e1, e2] = log_events<2>(ids);
    add_committed(h, {e1, e2}, t0);
    REQUIRE(claim_ids(h, "relay-a", 1, 30s, t0) == ids_of({&e1}));
    REQUIRE(claim_ids(h, "relay-b", 1, 60s, t0) == ids_of({&e2}));

    std::error_code ec;
    CHECK(h.store.release_expired_leases(t0 + 29s, ec) == 0);
    CHECK(describe(ec) == success);
    CHECK(h.store.release_expired_leases(t0 + 30s, ec) == 1);
    CHECK(find_row(h, e1.msg.id).lease_owner.empty());
    CHECK(find_row(h, e2.msg.id).lease_owner == "relay-b");
    CHECK(describe(h.store.mark_published(e1.msg.id, "relay-a", t0 + 30s)) ==
          describe(errc::lease_lost));
    CHECK(claim_ids(h, "relay-c", 10, 30s, t0 + 31s) == ids_of({&e1}));
    CHECK(h.store.release_expired_leases(t0 + 60s, ec) == 1); // e2's; e1 is held to t0 + 61s
    CHECK(find_row(h, e1.msg.id).lease_owner == "relay-c");
    CHECK(h.store.release_expired_leases(t0 + 60s, ec) == 0);
}

template <outbox_store Store>
void outbox_check_per_aggregate_order(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{110};
    const auto a1 = outbox_event(ids, "order", "A");
    const auto b1 = outbox_event(ids, "order", "B");
    const auto a2 = outbox_event(ids, "order", "A");
    const auto n1 = outbox_event(ids, "order", ""); // no ordering constraint
    const auto b2 = outbox_event(ids, "order", "B");
    const auto n2 = outbox_event(ids, "order", "");
    const auto c1 = outbox_event(ids, "invoice", "A"); // same id, other type: independent
    add_committed(h, {a1, b1, a2, n1}, t0);
    add_committed(h, {b2, n2, c1}, t0);

    // One event per aggregate in flight.
    CHECK(claim_ids(h, "relay-x", 10, 30s, t0) == ids_of({&a1, &b1, &n1, &n2, &c1}));
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0).empty());

    publish_row(h, a1.msg.id, "relay-x", t0);
    fail_row(h, b1.msg.id, "relay-x", "nack", t0 + 10s, 5, t0);
    // a2 is next for A; b2 still waits for b1, which waits for its retry.
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 1s) == ids_of({&a2}));
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 10s) == ids_of({&b1}));
    publish_row(h, b1.msg.id, "relay-y", t0 + 10s);
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 11s) == ids_of({&b2}));
}

template <outbox_store Store>
void outbox_check_parked_event_blocks_its_aggregate(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{111};
    const auto a1 = outbox_event(ids, "order", "A");
    const auto a2 = outbox_event(ids, "order", "A");
    const auto b1 = outbox_event(ids, "order", "B");
    add_committed(h, {a1, a2, b1}, t0);

    REQUIRE(claim_ids(h, "relay-x", 10, 30s, t0) == ids_of({&a1, &b1}));
    fail_row(h, a1.msg.id, "relay-x", "poison", t0, 1, t0);
    const auto parked = find_row(h, a1.msg.id);
    CHECK(parked.status == outbox_status::parked);
    CHECK(parked.last_error == "poison");
    CHECK(parked.attempts == 1);
    publish_row(h, b1.msg.id, "relay-x", t0);

    // a2 never overtakes the parked a1.
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 1h).empty());
    unpark_row(h, a1.msg.id, t0 + 1h);
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 1h) == ids_of({&a1}));
    publish_row(h, a1.msg.id, "relay-y", t0 + 1h);
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 1h) == ids_of({&a2}));
}

// The other order checks add every event before the first claim. Here the later events arrive
// while the head is claimed and unconfirmed: a store that decides what blocks an aggregate
// only from the rows waiting when the head was claimed hands them out at once.
template <outbox_store Store>
void outbox_check_event_added_behind_unconfirmed_head_waits(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{120};
    const auto a1 = outbox_event(ids, "order", "A");
    add_committed(h, {a1}, t0);
    REQUIRE(claim_ids(h, "relay-x", 10, 30s, t0) == ids_of({&a1}));

    // a2 commits while a1 is claimed and unconfirmed; b1, of another aggregate, with it.
    const auto a2 = outbox_event(ids, "order", "A");
    const auto b1 = outbox_event(ids, "order", "B");
    add_committed(h, {a2, b1}, t0 + 1s);
    CHECK(claim_ids(h, "relay-x", 10, 30s, t0 + 1s) == ids_of({&b1}));
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 2s).empty());
    publish_row(h, b1.msg.id, "relay-x", t0 + 2s);

    // A failed attempt keeps a2 waiting behind a1, through a1's retry.
    fail_row(h, a1.msg.id, "relay-x", "returned", t0 + 5s, 5, t0 + 2s);
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 3s).empty());
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 5s) == ids_of({&a1}));

    // a3 commits behind a1, claimed again; a1's lease then runs out unconfirmed, and the next
    // claimer gets a1 again, never a2 or a3.
    const auto a3 = outbox_event(ids, "order", "A");
    add_committed(h, {a3}, t0 + 6s);
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 6s).empty());
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 35s) == ids_of({&a1}));

    // Once a1 is confirmed, its successors follow one at a time.
    publish_row(h, a1.msg.id, "relay-z", t0 + 36s);
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 36s) == ids_of({&a2}));
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 36s).empty());
    publish_row(h, a2.msg.id, "relay-z", t0 + 37s);
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 37s) == ids_of({&a3}));
}

template <outbox_store Store>
void outbox_check_concurrent_claimers(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{118};
    constexpr int aggregates = 20;
    constexpr int events_per_aggregate = 10;
    std::vector<outbox_entry> es;
    for (int n = 0; n < events_per_aggregate; ++n)
        for (int a = 0; a < aggregates; ++a)
            es.push_back(outbox_event(ids, "order", std::to_string(a)));
    for (std::size_t i = 0; i < es.size(); i += 50)
        add_committed(h, std::vector<outbox_entry>(es.begin() + i, es.begin() + i + 50), t0);

    std::mutex m;
    std::set<message_id> held;
    std::vector<message_id> published_order;
    std::vector<std::string> problems;
    auto relay = [&](std::string owner) {
        for (int round = 0; round < 100000; ++round) {
            std::error_code ec;
            auto batch = h.store.claim(owner, 4, std::chrono::hours(1), t0, ec);
            {
                std::lock_guard lock(m);
                if (ec)
                    problems.push_back(owner + ": claim failed: " + describe(ec));
                if (published_order.size() == es.size() || !problems.empty())
                    return;
                for (const auto& r : batch)
                    if (!held.insert(r.msg.id).second)
                        problems.push_back(owner + " got a row held by another claimer");
            }
            if (batch.empty())
                std::this_thread::yield();
            for (const auto& r : batch) {
                // Marking and logging under one lock keeps the log in publication order.
                std::lock_guard lock(m);
                const auto mark = h.store.mark_published(r.msg.id, owner, t0);
                if (mark)
                    problems.push_back(owner + ": mark_published failed: " + describe(mark));
                held.erase(r.msg.id);
                published_order.push_back(r.msg.id);
            }
        }
        std::lock_guard lock(m);
        problems.push_back(owner + " gave up");
    };
    std::thread a(relay, "relay-a");
    std::thread b(relay, "relay-b");
    a.join();
    b.join();

    for (const auto& p : problems)
        FAIL_CHECK(p);
    REQUIRE(published_order.size() == es.size());
    CHECK(std::set<message_id>(published_order.begin(), published_order.end()).size() == es.size());
    // Per-aggregate order held across both claimers: es lists each aggregate's events in order.
    std::vector<std::size_t> position(es.size());
    for (std::size_t i = 0; i < published_order.size(); ++i) {
        const auto it = std::find_if(es.begin(), es.end(), [&](const outbox_entry& e) {
            return e.msg.id == published_order[i];
        });
        REQUIRE(it != es.end());
        position[static_cast<std::size_t>(it - es.begin())] = i;
    }
    for (std::size_t i = aggregates; i < es.size(); ++i)
        CHECK(position[i - aggregates] < position[i]);
    CHECK(stats_at(h, t0).published == es.size());
}

} // namespace letterbox::testing::detail
