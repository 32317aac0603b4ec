// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the outbox_store conformance suite about what operators use: purge_published by
// retention, stats, and list with its filter and pages. Included by
// letterbox/testing/detail/outbox_store_checks.hpp, which holds the helpers they share;
// outbox_store_suite.hpp lists them in LETTERBOX_OUTBOX_STORE_SUITE.

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/outbox_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <outbox_store Store>
void outbox_check_purge_published_by_retention(outbox_store_harness<Store>& h) {
    using namespace store_suite;
    message_id_generator ids{115};
    std::vector<outbox_entry> es;
    for (int i = 0; i < 5; ++i)
        es.push_back(outbox_event(ids, "log", ""));
    add_committed(h, es, t0);
    REQUIRE(claim_ids(h, "relay-a", 10, 30s, t0).size() == 5);
    publish_row(h, es[0].msg.id, "relay-a", t0 + 1min);
    publish_row(h, es[1].msg.id, "relay-a", t0 + 2min);
    publish_row(h, es[2].msg.id, "relay-a", t0 + 3min);
    park_row(h, es[4].msg.id, "parked");
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
    message_id_generator ids{116};
    CHECK(stats_at(h, t0) == outbox_stats{});

    const auto [e1, e2, e3, e4] = log_events<4>(ids);
    add_committed(h, {e1}, t0);
    add_committed(h, {e2}, t0 + 10s);
    add_committed(h, {e3}, t0 + 20s);
    add_committed(h, {e4}, t0 + 30s);
    REQUIRE(claim_ids(h, "relay-a", 2, 60s, t0 + 30s) == ids_of({&e1, &e2}));
    publish_row(h, e1.msg.id, "relay-a", t0 + 31s);
    park_row(h, e3.msg.id, "parked");

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
    message_id_generator ids{117};
    std::vector<outbox_entry> es;
    for (int i = 0; i < 7; ++i)
        es.push_back(outbox_event(ids, "log", ""));
    add_committed(h, es, t0);
    REQUIRE(claim_ids(h, "relay-a", 2, 30s, t0).size() == 2);
    publish_row(h, es[0].msg.id, "relay-a", t0);
    park_row(h, es[1].msg.id, "parked");

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

} // namespace letterbox::testing::detail
