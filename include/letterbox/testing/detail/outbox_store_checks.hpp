// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the outbox_store conformance suite, one function template each, so that
// tests/archetypes can instantiate them with `outbox_store_archetype`. Included by
// letterbox/testing/outbox_store_suite.hpp.
//
// This header holds what the checks share (the `store_suite` helpers and the runner); the checks
// themselves are grouped by concern in outbox_store_{unit_of_work,claim,settle,admin}_checks.hpp,
// included at the end.

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

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
    e.msg.properties.timestamp = std::chrono::time_point_cast<std::chrono::seconds>(t0);
    e.msg.properties.priority = 3;
    e.aggregate_type = std::move(aggregate_type);
    e.aggregate_id = std::move(aggregate_id);
    return e;
}

/// Stages `e` in `unit`, which must succeed.
template <outbox_store Store>
void stage_event(outbox_store_harness<Store>& h, typename Store::unit_of_work_type& unit,
                 const outbox_entry& e, store_time now) {
    REQUIRE(describe(h.store.add(unit, e, now)) == success);
}

/// Adds `entries` in one unit of work, which must commit.
template <outbox_store Store>
void add_committed(outbox_store_harness<Store>& h, const std::vector<outbox_entry>& entries,
                   store_time now) {
    auto u = h.begin();
    for (const auto& e : entries)
        stage_event(h, u, e, now);
    commit_unit(u);
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

/// `n` events of no aggregate, so that no ordering constraint applies between them.
template <std::size_t N>
std::array<outbox_entry, N> log_events(message_id_generator& ids) {
    std::array<outbox_entry, N> es;
    for (auto& e : es)
        e = outbox_event(ids, "log", "");
    return es;
}

/// Marks the row `id` published by `owner`, which must succeed.
template <outbox_store Store>
void publish_row(outbox_store_harness<Store>& h, const message_id& id, std::string_view owner,
                 store_time now) {
    REQUIRE(describe(h.store.mark_published(id, owner, now)) == success);
}

/// Records a failed attempt on the row `id` by `owner`, which must succeed.
template <outbox_store Store>
void fail_row(outbox_store_harness<Store>& h, const message_id& id, std::string_view owner,
              std::string_view error, store_time next_attempt_at, std::uint32_t max_attempts,
              store_time now) {
    REQUIRE(describe(h.store.record_failure(id, owner, error, next_attempt_at, max_attempts,
                                            now)) == success);
}

/// Parks the row `id`, which must succeed.
template <outbox_store Store>
void park_row(outbox_store_harness<Store>& h, const message_id& id, std::string_view reason) {
    REQUIRE(describe(h.store.park(id, reason)) == success);
}

/// Unparks the row `id`, which must succeed.
template <outbox_store Store>
void unpark_row(outbox_store_harness<Store>& h, const message_id& id, store_time now) {
    REQUIRE(describe(h.store.unpark(id, now)) == success);
}

/// Checks that the row `id` is published at `at`, with no lease.
template <outbox_store Store>
void check_published_row(outbox_store_harness<Store>& h, const message_id& id, store_time at) {
    const auto row = find_row(h, id);
    CHECK(row.status == outbox_status::published);
    REQUIRE(row.published_at.has_value());
    CHECK(*row.published_at == at);
    CHECK(row.lease_owner.empty());
}

/// Checks that the row `id` is pending and leased to `owner`.
template <outbox_store Store>
void check_leased_row(outbox_store_harness<Store>& h, const message_id& id,
                      std::string_view owner) {
    const auto row = find_row(h, id);
    CHECK(row.status == outbox_status::pending);
    CHECK(row.lease_owner == owner);
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
    store_suite::run_check<Fixture>(check);
}

} // namespace letterbox::testing::detail

// The checks, by concern.
#include <letterbox/testing/detail/outbox_store_admin_checks.hpp>
#include <letterbox/testing/detail/outbox_store_claim_checks.hpp>
#include <letterbox/testing/detail/outbox_store_settle_checks.hpp>
#include <letterbox/testing/detail/outbox_store_unit_of_work_checks.hpp>
