// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the outbox_store conformance suite about settling a claimed row: mark_published
// (one row or a batch), record_failure, park and unpark. Included by
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
#include <cstdint>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <outbox_store Store>
void outbox_check_mark_published_requires_lease_owner(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{112};
    const auto [e1, e2] = log_events<2>(ids);
    const auto unknown = ids();
    add_committed(h, {e1, e2}, t0);

    CHECK(describe(h.store.mark_published(e1.msg.id, "relay-a", t0)) ==
          describe(errc::lease_lost)); // not claimed by anyone
    CHECK(describe(h.store.mark_published(unknown, "relay-a", t0)) ==
          describe(errc::record_not_found));

    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0) == ids_of({&e1, &e2}));
    CHECK(describe(h.store.mark_published(e1.msg.id, "relay-b", t0)) == describe(errc::lease_lost));
    check_leased_row(h, e1.msg.id, "relay-a");

    publish_row(h, e1.msg.id, "relay-a", t0 + 1s);
    check_published_row(h, e1.msg.id, t0 + 1s);
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

        for (const auto* e : {&a1, &n1, &n3})
            check_published_row(h, e->msg.id, t0 + 1s);
        // Rows the batch did not mark are untouched.
        check_leased_row(h, other.msg.id, "relay-b");
        check_leased_row(h, n2.msg.id, "relay-a");
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
        fail_row(h, e.msg.id, "relay-a", error, now + 10s, 3, now);
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
    message_id_generator ids{114};
    const auto [e1, e2, e3] = log_events<3>(ids);
    const auto unknown = ids();
    add_committed(h, {e1, e2, e3}, t0);

    // e1 fails once, e2 stays leased, e3 is published.
    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0) == ids_of({&e1, &e2, &e3}));
    fail_row(h, e1.msg.id, "relay-a", "x", t0, 10, t0);
    publish_row(h, e3.msg.id, "relay-a", t0);

    park_row(h, e1.msg.id, "operator: bad payload");
    auto row = find_row(h, e1.msg.id);
    CHECK(row.status == outbox_status::parked);
    CHECK(row.last_error == "operator: bad payload");
    park_row(h, e1.msg.id, "operator: still bad");
    CHECK(find_row(h, e1.msg.id).last_error == "operator: still bad");

    park_row(h, e2.msg.id, "stop"); // a leased row
    CHECK(find_row(h, e2.msg.id).lease_owner.empty());
    CHECK(describe(h.store.mark_published(e2.msg.id, "relay-a", t0)) == describe(errc::lease_lost));
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 1h).empty());

    CHECK(describe(h.store.park(e3.msg.id, "no")) == describe(errc::invalid_state));
    CHECK(describe(h.store.park(unknown, "no")) == describe(errc::record_not_found));
    CHECK(describe(h.store.unpark(e3.msg.id, t0)) == describe(errc::invalid_state));
    CHECK(describe(h.store.unpark(unknown, t0)) == describe(errc::record_not_found));

    unpark_row(h, e1.msg.id, t0 + 5s);
    row = find_row(h, e1.msg.id);
    CHECK(row.status == outbox_status::pending);
    CHECK(row.attempts == 0);
    CHECK(row.next_attempt_at == t0 + 5s);
    CHECK(describe(h.store.unpark(e1.msg.id, t0 + 5s)) == describe(errc::invalid_state));
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 4s).empty());
    CHECK(claim_ids(h, "relay-b", 10, 30s, t0 + 5s) == ids_of({&e1}));
}

} // namespace letterbox::testing::detail
