// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the outbox_store conformance suite, one function template each, so that
// tests/archetypes can instantiate them with `outbox_store_archetype`. Included by
// letterbox/testing/outbox_store_suite.hpp.

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace letterbox::testing::detail {

namespace store_suite {

/// An event with every field set, so that a store which loses one fails `msg == entry.msg`.
inline outbox_entry outbox_event(message_id_generator& ids, std::string aggregate_type,
                                 std::string aggregate_id, std::string body = "body") {
    outbox_entry e;
    e.msg.id = ids();
    e.msg.type = aggregate_type + ".changed";
    e.msg.exchange = "letterbox.suite";
    e.msg.routing_key = aggregate_type + "." + aggregate_id;
    e.msg.headers.set("x-suite-text", "text");
    e.msg.headers.set("x-suite-count", std::int64_t{7});
    e.msg.headers.set("x-suite-table", field_table{{"nested", true}});
    e.msg.body = std::move(body);
    e.msg.body.push_back('\0');
    e.msg.body += "\xff binary tail";
    e.msg.properties.content_type = "application/octet-stream";
    e.msg.properties.correlation_id = "corr-1";
    e.msg.properties.timestamp = std::chrono::time_point_cast<std::chrono::seconds>(epoch());
    e.msg.properties.priority = 3;
    e.aggregate_type = std::move(aggregate_type);
    e.aggregate_id = std::move(aggregate_id);
    return e;
}

template <outbox_store Store>
void add_committed(outbox_store_harness<Store>& h, const std::vector<outbox_entry>& entries,
                   store_time now) {
    auto u = h.begin();
    for (const auto& e : entries)
        REQUIRE(describe(h.store.add(u, e, now)) == success);
    REQUIRE(describe(u.commit()) == success);
}

template <outbox_store Store>
std::vector<message_id> claim_ids(outbox_store_harness<Store>& h, std::string_view owner,
                                  std::size_t max_rows, store_time::duration lease,
                                  store_time now) {
    std::error_code ec;
    auto rows = h.store.claim(owner, max_rows, lease, now, ec);
    REQUIRE(describe(ec) == success);
    REQUIRE(rows.size() <= max_rows);
    std::vector<message_id> ids;
    for (const auto& r : rows) {
        CHECK(r.lease_owner == owner);
        CHECK(r.lease_expires_at == now + lease);
        CHECK(r.status == outbox_status::pending);
        ids.push_back(r.msg.id);
    }
    return ids;
}

template <outbox_store Store>
outbox_record find_row(outbox_store_harness<Store>& h, const message_id& id) {
    std::error_code ec;
    auto row = h.store.find(id, ec);
    REQUIRE(describe(ec) == success);
    REQUIRE(row.has_value());
    return *row;
}

template <outbox_store Store>
bool holds(outbox_store_harness<Store>& h, const message_id& id) {
    std::error_code ec;
    auto row = h.store.find(id, ec);
    REQUIRE(describe(ec) == success);
    return row.has_value();
}

template <outbox_store Store>
outbox_stats stats_at(outbox_store_harness<Store>& h, store_time now) {
    std::error_code ec;
    auto s = h.store.stats(now, ec);
    REQUIRE(describe(ec) == success);
    return s;
}

inline std::vector<message_id> ids_of(std::initializer_list<const outbox_entry*> entries) {
    std::vector<message_id> ids;
    for (const auto* e : entries)
        ids.push_back(e->msg.id);
    return ids;
}

} // namespace store_suite

/// Runs `check` against a fresh context of `Fixture`.
template <class Fixture>
void run_outbox_store_check(
    void (*check)(outbox_store_harness<store_suite::fixture_store_t<Fixture>>&)) {
    using store_type = store_suite::fixture_store_t<Fixture>;
    auto ctx = Fixture::make();
    outbox_store_harness<store_type> h{ctx.store(), [&ctx] { return ctx.begin(); },
                                       store_suite::features_of<Fixture, outbox_store_features>()};
    check(h);
}

template <outbox_store Store>
void outbox_check_add_is_invisible_until_commit(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{101};
    const auto e = outbox_event(ids, "order", "42");
    std::error_code ec;

    auto u = h.begin();
    REQUIRE(describe(h.store.add(u, e, t0)) == success);
    if (h.features.overlapping_units_of_work) {
        CHECK_FALSE(holds(h, e.msg.id));
        CHECK(claim_ids(h, "relay-a", 10, 30s, t0).empty());
        CHECK(stats_at(h, t0) == outbox_stats{});
        CHECK(h.store.list(outbox_query{}, ec).empty());
    } else {
        WARN("no overlapping units of work: uncommitted visibility not checked");
    }
    REQUIRE(describe(u.commit()) == success);

    const auto row = find_row(h, e.msg.id);
    CHECK(row.msg == e.msg);
    CHECK(row.aggregate_type == e.aggregate_type);
    CHECK(row.aggregate_id == e.aggregate_id);
    CHECK(row.sequence > 0);
    CHECK(row.created_at == t0);
    CHECK(row.status == outbox_status::pending);
    CHECK(row.attempts == 0);
    CHECK(row.next_attempt_at == t0);
    CHECK(row.last_error.empty());
    CHECK_FALSE(row.last_failure_at.has_value());
    CHECK(row.lease_owner.empty());
    CHECK_FALSE(row.published_at.has_value());

    auto claimed = h.store.claim("relay-a", 10, 30s, t0, ec);
    REQUIRE(describe(ec) == success);
    REQUIRE(claimed.size() == 1);
    CHECK(claimed[0].msg == e.msg);
    CHECK(claimed[0].sequence == row.sequence);
    CHECK(claimed[0].lease_owner == "relay-a");
    CHECK(claimed[0].lease_expires_at == t0 + 30s);
}

template <outbox_store Store>
void outbox_check_rollback_leaves_no_trace(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{102};
    const auto e1 = outbox_event(ids, "order", "1");
    const auto e2 = outbox_event(ids, "order", "2");
    {
        auto u = h.begin();
        REQUIRE(describe(h.store.add(u, e1, t0)) == success);
        REQUIRE(describe(u.rollback()) == success);
    }
    {
        auto u = h.begin(); // destroyed unfinished: rolled back
        REQUIRE(describe(h.store.add(u, e2, t0)) == success);
    }
    std::error_code ec;
    CHECK_FALSE(holds(h, e1.msg.id));
    CHECK_FALSE(holds(h, e2.msg.id));
    CHECK(claim_ids(h, "relay-a", 10, 30s, t0 + 1h).empty());
    CHECK(stats_at(h, t0) == outbox_stats{});
    CHECK(h.store.list(outbox_query{}, ec).empty());
    CHECK(describe(ec) == success);

    // Not even the id is left behind: it can be added again.
    add_committed(h, {e1}, t0);
    CHECK(claim_ids(h, "relay-a", 10, 30s, t0) == ids_of({&e1}));
}

template <outbox_store Store>
void outbox_check_on_commit_runs_only_after_commit(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{103};
    const auto e1 = outbox_event(ids, "order", "1");
    const auto e2 = outbox_event(ids, "order", "2");

    int committed_runs = 0;
    bool visible_in_callback = false;
    auto u = h.begin();
    REQUIRE(describe(h.store.add(u, e1, t0)) == success);
    REQUIRE(describe(u.on_commit([&] {
                ++committed_runs;
                std::error_code ec;
                visible_in_callback = h.store.find(e1.msg.id, ec).has_value();
            })) == success);
    CHECK(committed_runs == 0);
    REQUIRE(describe(u.commit()) == success);
    CHECK(committed_runs == 1);
    CHECK(visible_in_callback); // a relay woken by the callback finds the row

    int rolled_back_runs = 0;
    auto v = h.begin();
    REQUIRE(describe(h.store.add(v, e2, t0)) == success);
    REQUIRE(describe(v.on_commit([&] { ++rolled_back_runs; })) == success);
    REQUIRE(describe(v.rollback()) == success);
    CHECK(rolled_back_runs == 0);
    CHECK(committed_runs == 1);
}

template <outbox_store Store>
void outbox_check_finished_unit_of_work_is_closed(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{104};
    const auto e1 = outbox_event(ids, "order", "1");
    const auto e2 = outbox_event(ids, "order", "2");

    auto u = h.begin();
    REQUIRE(describe(h.store.add(u, e1, t0)) == success);
    REQUIRE(describe(u.commit()) == success);
    CHECK(describe(u.commit()) == describe(errc::transaction_closed));
    CHECK(describe(u.rollback()) == describe(errc::transaction_closed));
    CHECK(describe(u.on_commit([] {})) == describe(errc::transaction_closed));
    CHECK(describe(h.store.add(u, e2, t0)) == describe(errc::transaction_closed));
    CHECK_FALSE(holds(h, e2.msg.id));

    auto v = h.begin();
    REQUIRE(describe(v.rollback()) == success);
    CHECK(describe(v.rollback()) == describe(errc::transaction_closed));
    CHECK(describe(v.commit()) == describe(errc::transaction_closed));
}

template <outbox_store Store>
void outbox_check_malformed_payload_is_refused(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{112};
    auto bad = outbox_event(ids, "order", "1");
    bad.msg.properties.content_type = "application/json";
    bad.msg.body = "{\"order\": 1"; // truncated JSON
    auto good = outbox_event(ids, "order", "2");
    good.msg.properties.content_type = "application/json";
    good.msg.body = "{\"order\": 2}";

    auto u = h.begin();
    CHECK(describe(h.store.add(u, bad, t0)) == describe(errc::payload_malformed));
    // The unit stays usable and the refused entry left nothing behind.
    REQUIRE(describe(h.store.add(u, good, t0)) == success);
    REQUIRE(describe(u.commit()) == success);
    CHECK_FALSE(holds(h, bad.msg.id));
    CHECK(find_row(h, good.msg.id).msg == good.msg);
}

template <outbox_store Store>
void outbox_check_duplicate_message_id_is_refused(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{105};
    const auto e1 = outbox_event(ids, "order", "1", "first");
    auto e1_again = outbox_event(ids, "order", "1", "second");
    e1_again.msg.id = e1.msg.id;
    const auto e2 = outbox_event(ids, "order", "2");
    add_committed(h, {e1}, t0);

    // Against a committed row: refused, and the unit stays usable.
    {
        auto u = h.begin();
        CHECK(describe(h.store.add(u, e1_again, t0)) == describe(errc::duplicate_message_id));
        REQUIRE(describe(h.store.add(u, e2, t0)) == success);
        REQUIRE(describe(u.commit()) == success);
        CHECK(find_row(h, e1.msg.id).msg.body == e1.msg.body);
        CHECK(holds(h, e2.msg.id));
    }
    // Against a row staged in the same unit.
    const auto e3 = outbox_event(ids, "order", "3", "first");
    auto e3_again = outbox_event(ids, "order", "3", "second");
    e3_again.msg.id = e3.msg.id;
    {
        auto u = h.begin();
        REQUIRE(describe(h.store.add(u, e3, t0)) == success);
        CHECK(describe(h.store.add(u, e3_again, t0)) == describe(errc::duplicate_message_id));
        REQUIRE(describe(u.commit()) == success);
        CHECK(find_row(h, e3.msg.id).msg.body == e3.msg.body);
    }
    // Against a concurrent unit that commits first.
    if (!h.features.overlapping_units_of_work) {
        WARN("no overlapping units of work: concurrent duplicate not checked");
        return;
    }
    const auto e4 = outbox_event(ids, "order", "4", "first");
    auto e4_again = outbox_event(ids, "order", "4", "second");
    e4_again.msg.id = e4.msg.id;
    auto u1 = h.begin();
    auto u2 = h.begin();
    REQUIRE(describe(h.store.add(u1, e4, t0)) == success);
    const auto second_add = describe(h.store.add(u2, e4_again, t0));
    REQUIRE((second_add == success || second_add == describe(errc::duplicate_message_id)));
    REQUIRE(describe(u1.commit()) == success);
    if (second_add == success)
        CHECK(describe(u2.commit()) == describe(errc::duplicate_message_id));
    CHECK(find_row(h, e4.msg.id).msg.body == e4.msg.body);
    std::error_code ec;
    CHECK(h.store.list(outbox_query{}, ec).size() == 4);
}

template <outbox_store Store>
void outbox_check_claim_returns_creation_order(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
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
    const auto t0 = epoch();
    message_id_generator ids{107};
    const auto e = outbox_event(ids, "order", "1");
    add_committed(h, {e}, t0);
    // A row added "in the future" is not due yet either.
    const auto later = outbox_event(ids, "log", "");
    add_committed(h, {later}, t0 + 1h);

    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0) == ids_of({&e}));
    REQUIRE(describe(h.store.record_failure(e.msg.id, "relay-a", "broker down", t0 + 10s, 5,
                                            t0 + 1s)) == success);
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 5s).empty());
    REQUIRE(claim_ids(h, "relay-b", 10, 30s, t0 + 10s) == ids_of({&e}));
    REQUIRE(describe(h.store.mark_published(e.msg.id, "relay-b", t0 + 11s)) == success);
    CHECK(claim_ids(h, "relay-c", 10, 30s, t0 + 59min).empty());
    CHECK(claim_ids(h, "relay-c", 10, 30s, t0 + 1h) == ids_of({&later}));
}

template <outbox_store Store>
void outbox_check_lease_excludes_other_owners(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
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
    const auto t0 = epoch();
    message_id_generator ids{109};
    const auto e1 = outbox_event(ids, "log", "");
    const auto e2 = outbox_event(ids, "log", "");
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
    const auto t0 = epoch();
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

    REQUIRE(describe(h.store.mark_published(a1.msg.id, "relay-x", t0)) == success);
    REQUIRE(describe(h.store.record_failure(b1.msg.id, "relay-x", "nack", t0 + 10s, 5, t0)) ==
            success);
    // a2 is next for A; b2 still waits for b1, which waits for its retry.
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 1s) == ids_of({&a2}));
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 10s) == ids_of({&b1}));
    REQUIRE(describe(h.store.mark_published(b1.msg.id, "relay-y", t0 + 10s)) == success);
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 11s) == ids_of({&b2}));
}

template <outbox_store Store>
void outbox_check_parked_event_blocks_its_aggregate(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{111};
    const auto a1 = outbox_event(ids, "order", "A");
    const auto a2 = outbox_event(ids, "order", "A");
    const auto b1 = outbox_event(ids, "order", "B");
    add_committed(h, {a1, a2, b1}, t0);

    REQUIRE(claim_ids(h, "relay-x", 10, 30s, t0) == ids_of({&a1, &b1}));
    REQUIRE(describe(h.store.record_failure(a1.msg.id, "relay-x", "poison", t0, 1, t0)) == success);
    const auto parked = find_row(h, a1.msg.id);
    CHECK(parked.status == outbox_status::parked);
    CHECK(parked.last_error == "poison");
    CHECK(parked.attempts == 1);
    REQUIRE(describe(h.store.mark_published(b1.msg.id, "relay-x", t0)) == success);

    // a2 never overtakes the parked a1.
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 1h).empty());
    REQUIRE(describe(h.store.unpark(a1.msg.id, t0 + 1h)) == success);
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 1h) == ids_of({&a1}));
    REQUIRE(describe(h.store.mark_published(a1.msg.id, "relay-y", t0 + 1h)) == success);
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 1h) == ids_of({&a2}));
}

// The other order checks add every event before the first claim. Here the later events arrive
// while the head is claimed and unconfirmed: a store that decides what blocks an aggregate
// only from the rows waiting when the head was claimed hands them out at once.
template <outbox_store Store>
void outbox_check_event_added_behind_unconfirmed_head_waits(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
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
    REQUIRE(describe(h.store.mark_published(b1.msg.id, "relay-x", t0 + 2s)) == success);

    // A failed attempt keeps a2 waiting behind a1, through a1's retry.
    REQUIRE(describe(h.store.record_failure(a1.msg.id, "relay-x", "returned", t0 + 5s, 5,
                                            t0 + 2s)) == success);
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 3s).empty());
    CHECK(claim_ids(h, "relay-y", 10, 30s, t0 + 5s) == ids_of({&a1}));

    // a3 commits behind a1, claimed again; a1's lease then runs out unconfirmed, and the next
    // claimer gets a1 again, never a2 or a3.
    const auto a3 = outbox_event(ids, "order", "A");
    add_committed(h, {a3}, t0 + 6s);
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 6s).empty());
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 35s) == ids_of({&a1}));

    // Once a1 is confirmed, its successors follow one at a time.
    REQUIRE(describe(h.store.mark_published(a1.msg.id, "relay-z", t0 + 36s)) == success);
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 36s) == ids_of({&a2}));
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 36s).empty());
    REQUIRE(describe(h.store.mark_published(a2.msg.id, "relay-z", t0 + 37s)) == success);
    CHECK(claim_ids(h, "relay-z", 10, 30s, t0 + 37s) == ids_of({&a3}));
}

template <outbox_store Store>
void outbox_check_mark_published_requires_lease_owner(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{112};
    const auto e1 = outbox_event(ids, "log", "");
    const auto e2 = outbox_event(ids, "log", "");
    const auto unknown = ids();
    add_committed(h, {e1, e2}, t0);

    CHECK(describe(h.store.mark_published(e1.msg.id, "relay-a", t0)) ==
          describe(errc::lease_lost)); // not claimed by anyone
    CHECK(describe(h.store.mark_published(unknown, "relay-a", t0)) ==
          describe(errc::record_not_found));

    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0) == ids_of({&e1, &e2}));
    CHECK(describe(h.store.mark_published(e1.msg.id, "relay-b", t0)) == describe(errc::lease_lost));
    auto row = find_row(h, e1.msg.id);
    CHECK(row.status == outbox_status::pending);
    CHECK(row.lease_owner == "relay-a");

    REQUIRE(describe(h.store.mark_published(e1.msg.id, "relay-a", t0 + 1s)) == success);
    row = find_row(h, e1.msg.id);
    CHECK(row.status == outbox_status::published);
    REQUIRE(row.published_at.has_value());
    CHECK(*row.published_at == t0 + 1s);
    CHECK(row.lease_owner.empty());
    CHECK(describe(h.store.mark_published(e1.msg.id, "relay-a", t0 + 2s)) ==
          describe(errc::lease_lost)); // already settled
    CHECK(describe(h.store.record_failure(e1.msg.id, "relay-a", "late", t0, 5, t0)) ==
          describe(errc::lease_lost));

    // An expired lease that nobody took over still belongs to its owner.
    CHECK(describe(h.store.mark_published(e2.msg.id, "relay-a", t0 + 1h)) == success);
}

template <outbox_store Store>
void outbox_check_mark_published_batch(outbox_store_harness<Store>& h) {
    if constexpr (!outbox_batch_settler<Store>) {
        WARN("the store does not model outbox_batch_settler: batch marks not checked");
        return;
    } else {
        using namespace store_suite;
        const auto t0 = epoch();
        message_id_generator ids{119};
        const auto a1 = outbox_event(ids, "order", "A");
        const auto a2 = outbox_event(ids, "order", "A");
        const auto n1 = outbox_event(ids, "log", "");
        const auto n2 = outbox_event(ids, "log", "");
        const auto n3 = outbox_event(ids, "log", "");
        const auto other = outbox_event(ids, "log", "");
        const auto unknown = ids();
        add_committed(h, {a1, a2, n1, n2, n3, other}, t0);
        REQUIRE(claim_ids(h, "relay-a", 4, 30s, t0) == ids_of({&a1, &n1, &n2, &n3}));
        REQUIRE(claim_ids(h, "relay-b", 10, 30s, t0) == ids_of({&other}));

        // Leftovers of an earlier call are replaced, not appended to.
        std::vector<std::error_code> results(7, make_error_code(errc::internal_error));
        const std::vector<message_id> batch{a1.msg.id, other.msg.id, unknown,
                                            n1.msg.id, n1.msg.id,    n3.msg.id};
        REQUIRE(describe(h.store.mark_published(std::span<const message_id>(batch), "relay-a",
                                                t0 + 1s, results)) == success);
        REQUIRE(results.size() == batch.size());
        CHECK(describe(results[0]) == success);
        CHECK(describe(results[1]) == describe(errc::lease_lost)); // leased to relay-b
        CHECK(describe(results[2]) == describe(errc::record_not_found));
        CHECK(describe(results[3]) == success);
        CHECK(describe(results[4]) == describe(errc::lease_lost)); // settled by results[3]
        CHECK(describe(results[5]) == success);

        for (const auto* e : {&a1, &n1, &n3}) {
            const auto row = find_row(h, e->msg.id);
            CHECK(row.status == outbox_status::published);
            REQUIRE(row.published_at.has_value());
            CHECK(*row.published_at == t0 + 1s);
            CHECK(row.lease_owner.empty());
        }
        // Rows the batch did not mark are untouched.
        auto row = find_row(h, other.msg.id);
        CHECK(row.status == outbox_status::pending);
        CHECK(row.lease_owner == "relay-b");
        row = find_row(h, n2.msg.id);
        CHECK(row.status == outbox_status::pending);
        CHECK(row.lease_owner == "relay-a");
        CHECK(stats_at(h, t0 + 1s).published == 3);

        // a1 published: its aggregate's next event is claimable.
        CHECK(claim_ids(h, "relay-c", 10, 30s, t0 + 2s) == ids_of({&a2}));

        // An empty batch marks nothing and succeeds.
        REQUIRE(describe(h.store.mark_published(std::span<const message_id>(), "relay-a", t0 + 3s,
                                                results)) == success);
        CHECK(results.empty());
        CHECK(stats_at(h, t0 + 3s).published == 3);
    }
}

template <outbox_store Store>
void outbox_check_record_failure_counts_and_parks(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{113};
    const auto e = outbox_event(ids, "order", "1");
    add_committed(h, {e}, t0);

    CHECK(describe(h.store.record_failure(ids(), "relay-a", "x", t0, 3, t0)) ==
          describe(errc::record_not_found));
    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0) == ids_of({&e}));
    CHECK(describe(h.store.record_failure(e.msg.id, "relay-b", "x", t0, 3, t0)) ==
          describe(errc::lease_lost));
    CHECK(find_row(h, e.msg.id).attempts == 0);

    auto now = t0;
    for (std::uint32_t attempt = 1; attempt <= 3; ++attempt) {
        INFO("attempt " << attempt);
        if (attempt > 1)
            REQUIRE(claim_ids(h, "relay-a", 10, 30s, now) == ids_of({&e}));
        const std::string error = "boom " + std::to_string(attempt);
        REQUIRE(describe(h.store.record_failure(e.msg.id, "relay-a", error, now + 10s, 3, now)) ==
                success);
        const auto row = find_row(h, e.msg.id);
        CHECK(row.attempts == attempt);
        CHECK(row.last_error == error);
        REQUIRE(row.last_failure_at.has_value());
        CHECK(*row.last_failure_at == now);
        CHECK(row.lease_owner.empty());
        if (attempt < 3) {
            CHECK(row.status == outbox_status::pending);
            CHECK(row.next_attempt_at == now + 10s);
        } else {
            CHECK(row.status == outbox_status::parked);
        }
        now += 10s;
    }
    CHECK(claim_ids(h, "relay-a", 10, 30s, now + 24h).empty());
    CHECK(stats_at(h, now).parked == 1);
}

template <outbox_store Store>
void outbox_check_park_and_unpark(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{114};
    const auto e1 = outbox_event(ids, "log", "");
    const auto e2 = outbox_event(ids, "log", "");
    const auto e3 = outbox_event(ids, "log", "");
    const auto unknown = ids();
    add_committed(h, {e1, e2, e3}, t0);

    // e1 fails once, e2 stays leased, e3 is published.
    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0) == ids_of({&e1, &e2, &e3}));
    REQUIRE(describe(h.store.record_failure(e1.msg.id, "relay-a", "x", t0, 10, t0)) == success);
    REQUIRE(describe(h.store.mark_published(e3.msg.id, "relay-a", t0)) == success);

    REQUIRE(describe(h.store.park(e1.msg.id, "operator: bad payload")) == success);
    auto row = find_row(h, e1.msg.id);
    CHECK(row.status == outbox_status::parked);
    CHECK(row.last_error == "operator: bad payload");
    REQUIRE(describe(h.store.park(e1.msg.id, "operator: still bad")) == success);
    CHECK(find_row(h, e1.msg.id).last_error == "operator: still bad");

    REQUIRE(describe(h.store.park(e2.msg.id, "stop")) == success); // a leased row
    CHECK(find_row(h, e2.msg.id).lease_owner.empty());
    CHECK(describe(h.store.mark_published(e2.msg.id, "relay-a", t0)) == describe(errc::lease_lost));
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 1h).empty());

    CHECK(describe(h.store.park(e3.msg.id, "no")) == describe(errc::invalid_state));
    CHECK(describe(h.store.park(unknown, "no")) == describe(errc::record_not_found));
    CHECK(describe(h.store.unpark(e3.msg.id, t0)) == describe(errc::invalid_state));
    CHECK(describe(h.store.unpark(unknown, t0)) == describe(errc::record_not_found));

    REQUIRE(describe(h.store.unpark(e1.msg.id, t0 + 5s)) == success);
    row = find_row(h, e1.msg.id);
    CHECK(row.status == outbox_status::pending);
    CHECK(row.attempts == 0);
    CHECK(row.next_attempt_at == t0 + 5s);
    CHECK(describe(h.store.unpark(e1.msg.id, t0 + 5s)) == describe(errc::invalid_state));
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 4s).empty());
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 5s) == ids_of({&e1}));
}

template <outbox_store Store>
void outbox_check_purge_published_by_retention(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{115};
    std::vector<outbox_entry> es;
    for (int i = 0; i < 5; ++i)
        es.push_back(outbox_event(ids, "log", ""));
    add_committed(h, es, t0);
    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0).size() == 5);
    REQUIRE(describe(h.store.mark_published(es[0].msg.id, "relay-a", t0 + 1min)) == success);
    REQUIRE(describe(h.store.mark_published(es[1].msg.id, "relay-a", t0 + 2min)) == success);
    REQUIRE(describe(h.store.mark_published(es[2].msg.id, "relay-a", t0 + 3min)) == success);
    REQUIRE(describe(h.store.park(es[4].msg.id, "parked")) == success);
    // es[3] stays pending (leased).

    std::error_code ec;
    CHECK(h.store.purge_published(t0 + 2min, ec) == 1); // strictly before
    CHECK(describe(ec) == success);
    CHECK_FALSE(holds(h, es[0].msg.id));
    CHECK(holds(h, es[1].msg.id));
    CHECK(h.store.purge_published(t0 + 2min, ec) == 0);
    CHECK(h.store.purge_published(t0 + 24h, ec) == 2);
    CHECK(holds(h, es[3].msg.id));
    CHECK(holds(h, es[4].msg.id));
    const auto s = stats_at(h, t0 + 24h);
    CHECK(s.published == 0);
    CHECK(s.pending == 1);
    CHECK(s.parked == 1);
}

template <outbox_store Store>
void outbox_check_stats(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{116};
    CHECK(stats_at(h, t0) == outbox_stats{});

    const auto e1 = outbox_event(ids, "log", "");
    const auto e2 = outbox_event(ids, "log", "");
    const auto e3 = outbox_event(ids, "log", "");
    const auto e4 = outbox_event(ids, "log", "");
    add_committed(h, {e1}, t0);
    add_committed(h, {e2}, t0 + 10s);
    add_committed(h, {e3}, t0 + 20s);
    add_committed(h, {e4}, t0 + 30s);
    REQUIRE(claim_ids(h, "relay-a", 2, 60s, t0 + 30s) == ids_of({&e1, &e2}));
    REQUIRE(describe(h.store.mark_published(e1.msg.id, "relay-a", t0 + 31s)) == success);
    REQUIRE(describe(h.store.park(e3.msg.id, "parked")) == success);

    auto s = stats_at(h, t0 + 40s);
    CHECK(s.pending == 2); // e2 (leased) and e4
    CHECK(s.leased == 1);
    CHECK(s.parked == 1);
    CHECK(s.published == 1);
    CHECK(s.oldest_pending_age == 30s); // e2, created at t0 + 10s

    s = stats_at(h, t0 + 200s);
    CHECK(s.leased == 0); // e2's lease ended at t0 + 90s
    CHECK(s.oldest_pending_age == 190s);
}

template <outbox_store Store>
void outbox_check_list_filters_and_pages(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
    message_id_generator ids{117};
    std::vector<outbox_entry> es;
    for (int i = 0; i < 7; ++i)
        es.push_back(outbox_event(ids, "log", ""));
    add_committed(h, es, t0);
    REQUIRE(claim_ids(h, "relay-a", 2, 30s, t0).size() == 2);
    REQUIRE(describe(h.store.mark_published(es[0].msg.id, "relay-a", t0)) == success);
    REQUIRE(describe(h.store.park(es[1].msg.id, "parked")) == success);

    std::error_code ec;
    auto all = h.store.list(outbox_query{}, ec);
    REQUIRE(describe(ec) == success);
    REQUIRE(all.size() == 7);
    for (std::size_t i = 0; i < all.size(); ++i) {
        CHECK(all[i].msg == es[i].msg);
        if (i > 0)
            CHECK(all[i - 1].sequence < all[i].sequence);
    }
    CHECK(h.store.list(outbox_query{outbox_status::pending}, ec).size() == 5);
    const auto parked = h.store.list(outbox_query{outbox_status::parked}, ec);
    REQUIRE(parked.size() == 1);
    CHECK(parked[0].msg.id == es[1].msg.id);
    const auto published = h.store.list(outbox_query{outbox_status::published}, ec);
    REQUIRE(published.size() == 1);
    CHECK(published[0].msg.id == es[0].msg.id);

    std::vector<message_id> paged;
    std::uint64_t after = 0;
    for (std::size_t expected : {3u, 3u, 1u, 0u}) {
        const auto page = h.store.list(outbox_query{std::nullopt, after, 3}, ec);
        REQUIRE(describe(ec) == success);
        REQUIRE(page.size() == expected);
        for (const auto& r : page)
            paged.push_back(r.msg.id);
        if (!page.empty())
            after = page.back().sequence;
    }
    CHECK(paged.size() == 7);
    // Reading changed nothing: the five pending rows are still there to claim.
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 1h).size() == 5);
}

template <outbox_store Store>
void outbox_check_concurrent_claimers(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    const auto t0 = epoch();
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
