// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the outbox_store conformance suite about the unit of work: an add is seen only once
// committed, a rollback leaves nothing, on_commit callbacks, a finished unit refuses use, and
// refused adds (duplicate id, bad payload). Included by
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

#include <chrono>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <outbox_store Store>
void outbox_check_add_is_invisible_until_commit(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{101};
    const auto e = outbox_event(ids, "order", "42");
    std::error_code ec;

    auto u = h.begin();
    stage_event(h, u, e, t0);
    if (h.features.overlapping_units_of_work) {
        CHECK_FALSE(holds(h, e.msg.id));
        CHECK(claim_ids(h, "relay-a", 10, 30s, t0).empty());
        CHECK(stats_at(h, t0) == outbox_stats{});
        CHECK(h.store.list(outbox_query{}, ec).empty());
    } else {
        WARN("no overlapping units of work: uncommitted visibility not checked");
    }
    commit_unit(u);

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
    message_id_generator ids{102};
    const auto e1 = outbox_event(ids, "order", "1");
    const auto e2 = outbox_event(ids, "order", "2");
    {
        auto u = h.begin();
        stage_event(h, u, e1, t0);
        roll_back_unit(u);
    }
    {
        auto u = h.begin(); // destroyed unfinished: rolled back
        stage_event(h, u, e2, t0);
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
    message_id_generator ids{103};
    const auto e1 = outbox_event(ids, "order", "1");
    const auto e2 = outbox_event(ids, "order", "2");

    int committed_runs = 0;
    bool visible_in_callback = false;
    auto u = h.begin();
    stage_event(h, u, e1, t0);
    REQUIRE(describe(u.on_commit([&] {
                ++committed_runs;
                std::error_code ec;
                visible_in_callback = h.store.find(e1.msg.id, ec).has_value();
            })) == success);
    CHECK(committed_runs == 0);
    commit_unit(u);
    CHECK(committed_runs == 1);
    CHECK(visible_in_callback); // a relay woken by the callback finds the row

    int rolled_back_runs = 0;
    auto v = h.begin();
    stage_event(h, v, e2, t0);
    REQUIRE(describe(v.on_commit([&] { ++rolled_back_runs; })) == success);
    roll_back_unit(v);
    CHECK(rolled_back_runs == 0);
    CHECK(committed_runs == 1);
}

template <outbox_store Store>
void outbox_check_finished_unit_of_work_is_closed(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{104};
    const auto e1 = outbox_event(ids, "order", "1");
    const auto e2 = outbox_event(ids, "order", "2");

    auto u = h.begin();
    stage_event(h, u, e1, t0);
    commit_unit(u);
    CHECK(describe(u.commit()) == describe(errc::transaction_closed));
    CHECK(describe(u.rollback()) == describe(errc::transaction_closed));
    CHECK(describe(u.on_commit([] {})) == describe(errc::transaction_closed));
    CHECK(describe(h.store.add(u, e2, t0)) == describe(errc::transaction_closed));
    CHECK_FALSE(holds(h, e2.msg.id));

    auto v = h.begin();
    roll_back_unit(v);
    CHECK(describe(v.rollback()) == describe(errc::transaction_closed));
    CHECK(describe(v.commit()) == describe(errc::transaction_closed));
}

template <outbox_store Store>
void outbox_check_malformed_payload_is_refused(outbox_store_harness<Store>& h) {
    using namespace store_suite;
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
    stage_event(h, u, good, t0);
    commit_unit(u);
    CHECK_FALSE(holds(h, bad.msg.id));
    CHECK(find_row(h, good.msg.id).msg == good.msg);
}

template <outbox_store Store>
void outbox_check_duplicate_message_id_is_refused(outbox_store_harness<Store>& h) {
    using namespace store_suite;
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
        stage_event(h, u, e2, t0);
        commit_unit(u);
        CHECK(find_row(h, e1.msg.id).msg.body == e1.msg.body);
        CHECK(holds(h, e2.msg.id));
    }
    // Against a row staged in the same unit.
    const auto e3 = outbox_event(ids, "order", "3", "first");
    auto e3_again = outbox_event(ids, "order", "3", "second");
    e3_again.msg.id = e3.msg.id;
    {
        auto u = h.begin();
        stage_event(h, u, e3, t0);
        CHECK(describe(h.store.add(u, e3_again, t0)) == describe(errc::duplicate_message_id));
        commit_unit(u);
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
    stage_event(h, u1, e4, t0);
    const auto second_add = describe(h.store.add(u2, e4_again, t0));
    REQUIRE((second_add == success || second_add == describe(errc::duplicate_message_id)));
    commit_unit(u1);
    if (second_add == success)
        CHECK(describe(u2.commit()) == describe(errc::duplicate_message_id));
    CHECK(find_row(h, e4.msg.id).msg.body == e4.msg.body);
    std::error_code ec;
    CHECK(h.store.list(outbox_query{}, ec).size() == 4);
}

} // namespace letterbox::testing::detail
