// SPDX-License-Identifier: BSL-1.0
#pragma once

// The checks of the saga_store conformance suite that run on one thread, one function template
// each, so that tests/archetypes can instantiate them with `saga_store_archetype`. Included by
// letterbox/testing/saga_store_suite.hpp; the concurrent checks are in
// saga_store_concurrency_checks.hpp, included at the end (they use the helpers here).

#include <letterbox/concepts/saga_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/saga_instance.hpp>
#include <letterbox/testing/detail/store_suite_support.hpp>
#include <letterbox/testing/saga_store_suite.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

namespace store_suite {

/// A new instance of the saga type "order", not stored yet (version 0).
inline saga_instance new_instance(std::string id, std::string correlation,
                                  std::string state = "started") {
    saga_instance s;
    s.saga_type = "order";
    s.id = std::move(id);
    s.correlation = std::move(correlation);
    s.state = std::move(state);
    s.data = R"({"step":0})";
    s.updated_at = t0;
    return s;
}

/// The committed instance (`type`, `id`), if any; the read must succeed.
template <saga_store Store>
std::optional<saga_instance> found(saga_store_harness<Store>& h, std::string_view id,
                                   std::string_view type = "order") {
    std::error_code ec;
    auto instance = h.store.find(type, id, ec);
    REQUIRE(describe(ec) == success);
    return instance;
}

template <saga_store Store>
std::size_t saga_count(saga_store_harness<Store>& h) {
    std::error_code ec;
    const auto n = h.store.size(ec);
    REQUIRE(describe(ec) == success);
    return n;
}

template <saga_store Store>
std::vector<saga_timeout_due> due_at(saga_store_harness<Store>& h, store_time now,
                                     std::size_t limit = 100) {
    std::error_code ec;
    auto due = h.store.due_timeouts(now, limit, ec);
    REQUIRE(describe(ec) == success);
    return due;
}

/// Inserts `instance` in a unit of its own, which must commit.
template <saga_store Store>
void insert_committed(saga_store_harness<Store>& h, const saga_instance& instance) {
    auto u = h.begin();
    REQUIRE(describe(h.store.insert(u, instance)) == success);
    commit_unit(u);
}

/// Writes `instance` (an insert at version 0, else an update) in a unit of its own, then
/// commits. A conflict from the write rolls the unit back.
template <saga_store Store>
write_outcome write_and_commit(saga_store_harness<Store>& h, const saga_instance& instance,
                               std::string* error = nullptr) {
    auto u = h.begin();
    const auto ec =
        instance.version == 0 ? h.store.insert(u, instance) : h.store.update(u, instance);
    return finish_write(u, ec, error);
}

} // namespace store_suite

/// Runs `check` against a fresh context of `Fixture`.
template <class Fixture>
void run_saga_store_check(
    void (*check)(saga_store_harness<store_suite::fixture_store_t<Fixture>>&)) {
    store_suite::run_check<Fixture>(check);
}

template <saga_store Store>
void saga_check_insert_then_find(saga_store_harness<Store>& h) {
    using namespace store_suite;
    auto instance = new_instance("s-1", "order-1");
    instance.timeouts = {{"payment", t0 + 30s}, {"expiry", t0 + 10s}};
    CHECK(saga_count(h) == 0);
    auto u = h.begin();
    REQUIRE(describe(h.store.insert(u, instance)) == success);
    if (h.features.overlapping_units_of_work)
        CHECK_FALSE(found(h, "s-1")); // not before commit
    commit_unit(u);

    auto expected = instance;
    expected.version = 1;
    expected.timeouts = {{"expiry", t0 + 10s}, {"payment", t0 + 30s}}; // earliest first
    CHECK(found(h, "s-1") == expected);
    std::error_code ec;
    CHECK(h.store.find_by_correlation("order", "order-1", ec) == expected);
    CHECK(describe(ec) == success);
    CHECK_FALSE(h.store.find_by_correlation("order", "order-2", ec));
    CHECK_FALSE(found(h, "s-2"));
    CHECK(saga_count(h) == 1);
}

template <saga_store Store>
void saga_check_update_writes_next_version(saga_store_harness<Store>& h) {
    using namespace store_suite;
    insert_committed(h, new_instance("s-1", "order-1"));
    auto read = found(h, "s-1");
    REQUIRE(read);
    auto next = *read;
    next.state = "completed";
    next.data = R"({"step":2})";
    next.finished = true;
    next.timeouts = {{"cleanup", t0 + 1h}};
    next.updated_at = t0 + 5s;
    next.correlation = "order-9"; // ignored: the correlation is the instance's for life
    REQUIRE(write_and_commit(h, next) == write_outcome::committed);

    auto expected = next;
    expected.version = 2;
    expected.correlation = "order-1";
    CHECK(found(h, "s-1") == expected);
    std::error_code ec;
    CHECK(h.store.find_by_correlation("order", "order-1", ec) == expected);
    CHECK_FALSE(h.store.find_by_correlation("order", "order-9", ec));
}

template <saga_store Store>
void saga_check_stale_update_conflicts(saga_store_harness<Store>& h) {
    using namespace store_suite;
    insert_committed(h, new_instance("s-1", "order-1"));
    const auto v1 = found(h, "s-1");
    REQUIRE(v1);
    auto first = *v1;
    first.state = "reserved";
    REQUIRE(write_and_commit(h, first) == write_outcome::committed);

    // A second writer that read version 1 too: never an overwrite.
    auto second = *v1;
    second.state = "cancelled";
    auto u = h.begin();
    auto side = new_instance("s-2", "order-2");
    REQUIRE(describe(h.store.insert(u, side)) == success);
    const auto ec = h.store.update(u, second);
    if (ec) {
        CHECK(describe(ec) == describe(errc::concurrency_conflict));
        commit_unit(u); // the unit stays usable: its other write commits
        CHECK(found(h, "s-2"));
    } else {
        CHECK(describe(u.commit()) == describe(errc::concurrency_conflict));
        CHECK_FALSE(found(h, "s-2")); // the loser applies none of its writes
    }
    const auto now = found(h, "s-1");
    REQUIRE(now);
    CHECK(now->state == "reserved");
    CHECK(now->version == 2);
}

template <saga_store Store>
void saga_check_taken_keys_conflict(saga_store_harness<Store>& h) {
    using namespace store_suite;
    insert_committed(h, new_instance("s-1", "order-1"));
    auto u = h.begin();
    CHECK(describe(h.store.insert(u, new_instance("s-1", "order-2"))) ==
          describe(errc::concurrency_conflict));
    CHECK(describe(h.store.insert(u, new_instance("s-2", "order-1"))) ==
          describe(errc::concurrency_conflict));
    // Taken within the unit too.
    REQUIRE(describe(h.store.insert(u, new_instance("s-3", "order-3"))) == success);
    CHECK(describe(h.store.insert(u, new_instance("s-3", "order-4"))) ==
          describe(errc::concurrency_conflict));
    CHECK(describe(h.store.insert(u, new_instance("s-4", "order-3"))) ==
          describe(errc::concurrency_conflict));
    commit_unit(u);
    CHECK(saga_count(h) == 2);
    const auto first = found(h, "s-1");
    REQUIRE(first);
    CHECK(first->correlation == "order-1");
    CHECK_FALSE(found(h, "s-2"));
    CHECK_FALSE(found(h, "s-4"));
}

template <saga_store Store>
void saga_check_one_write_per_unit(saga_store_harness<Store>& h) {
    using namespace store_suite;
    {
        // An update of an instance inserted by the same unit names version 0, which it read.
        auto u = h.begin();
        const auto fresh = new_instance("s-1", "order-1");
        REQUIRE(describe(h.store.insert(u, fresh)) == success);
        CHECK(describe(h.store.update(u, fresh)) == describe(errc::concurrency_conflict));
        commit_unit(u);
    }
    const auto v1 = found(h, "s-1");
    REQUIRE(v1);
    auto a = *v1;
    a.state = "a";
    auto b = *v1;
    b.state = "b";
    auto u = h.begin();
    REQUIRE(describe(h.store.update(u, a)) == success);
    CHECK(describe(h.store.update(u, b)) == describe(errc::concurrency_conflict));
    commit_unit(u);
    const auto now = found(h, "s-1");
    REQUIRE(now);
    CHECK(now->state == "a");
    CHECK(now->version == 2);
}

template <saga_store Store>
void saga_check_rollback_leaves_no_trace(saga_store_harness<Store>& h) {
    using namespace store_suite;
    {
        auto u = h.begin();
        REQUIRE(describe(h.store.insert(u, new_instance("s-1", "order-1"))) == success);
        roll_back_unit(u);
    }
    {
        auto u = h.begin(); // destroyed unfinished: rolled back
        REQUIRE(describe(h.store.insert(u, new_instance("s-1", "order-1"))) == success);
    }
    CHECK_FALSE(found(h, "s-1"));
    CHECK(saga_count(h) == 0);
    insert_committed(h, new_instance("s-1", "order-1")); // the keys are free
    const auto v1 = found(h, "s-1");
    REQUIRE(v1);
    auto next = *v1;
    next.state = "moved";
    {
        auto u = h.begin();
        REQUIRE(describe(h.store.update(u, next)) == success);
        roll_back_unit(u);
    }
    CHECK(found(h, "s-1") == v1);
    // Version 1 is still the one to write from.
    CHECK(write_and_commit(h, next) == write_outcome::committed);
}

template <saga_store Store>
void saga_check_finished_unit_refuses_writes(saga_store_harness<Store>& h) {
    using namespace store_suite;
    insert_committed(h, new_instance("s-1", "order-1"));
    auto read = found(h, "s-1");
    REQUIRE(read);
    auto u = h.begin();
    commit_unit(u);
    CHECK(describe(h.store.insert(u, new_instance("s-2", "order-2"))) ==
          describe(errc::transaction_closed));
    CHECK(describe(h.store.update(u, *read)) == describe(errc::transaction_closed));
    CHECK(saga_count(h) == 1);
    CHECK(found(h, "s-1") == read);
}

template <saga_store Store>
void saga_check_invalid_instances_refused(saga_store_harness<Store>& h) {
    using namespace store_suite;
    auto u = h.begin();
    auto stored_already = new_instance("s-1", "order-1");
    stored_already.version = 3;
    CHECK(describe(h.store.insert(u, stored_already)) == describe(errc::precondition_failed));
    CHECK(describe(h.store.insert(u, new_instance("", "order-1"))) ==
          describe(errc::invalid_argument));
    CHECK(describe(h.store.insert(u, new_instance("s-1", ""))) == describe(errc::invalid_argument));
    auto no_type = new_instance("s-1", "order-1");
    no_type.saga_type.clear();
    CHECK(describe(h.store.insert(u, no_type)) == describe(errc::invalid_argument));
    auto twice = new_instance("s-1", "order-1");
    twice.timeouts = {{"payment", t0 + 1s}, {"payment", t0 + 2s}};
    CHECK(describe(h.store.insert(u, twice)) == describe(errc::invalid_argument));
    // The unit stays usable, and nothing was staged.
    REQUIRE(describe(h.store.insert(u, new_instance("s-1", "order-1"))) == success);
    commit_unit(u);
    CHECK(saga_count(h) == 1);
    auto read = found(h, "s-1");
    REQUIRE(read);
    read->timeouts = twice.timeouts;
    auto v = h.begin();
    CHECK(describe(h.store.update(v, *read)) == describe(errc::invalid_argument));
    commit_unit(v);
    CHECK(found(h, "s-1")->version == 1);
}

template <saga_store Store>
void saga_check_keys_are_per_saga_type(saga_store_harness<Store>& h) {
    using namespace store_suite;
    auto order = new_instance("s-1", "key-1");
    auto refund = new_instance("s-1", "key-1");
    refund.saga_type = "refund";
    refund.state = "refunding";
    insert_committed(h, order);
    insert_committed(h, refund);
    CHECK(saga_count(h) == 2);
    const auto a = found(h, "s-1", "order");
    const auto b = found(h, "s-1", "refund");
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->state == "started");
    CHECK(b->state == "refunding");
    auto next = *b;
    next.state = "refunded";
    REQUIRE(write_and_commit(h, next) == write_outcome::committed);
    CHECK(found(h, "s-1", "order")->version == 1);
}

template <saga_store Store>
void saga_check_due_timeouts_in_order(saga_store_harness<Store>& h) {
    using namespace store_suite;
    auto a = new_instance("s-a", "order-a");
    a.timeouts = {{"payment", t0 + 3s}, {"expiry", t0 + 1s}};
    auto b = new_instance("s-b", "order-b");
    b.timeouts = {{"payment", t0 + 2s}};
    auto c = new_instance("s-c", "order-c"); // none
    insert_committed(h, a);
    insert_committed(h, b);
    insert_committed(h, c);

    CHECK(due_at(h, t0).empty());
    CHECK(due_at(h, t0 + 2s) ==
          std::vector<saga_timeout_due>{{"order", "s-a", "expiry", t0 + 1s},
                                        {"order", "s-b", "payment", t0 + 2s}}); // due at `now`
    CHECK(due_at(h, t0 + 1h, 1) ==
          std::vector<saga_timeout_due>{{"order", "s-a", "expiry", t0 + 1s}});
    CHECK(due_at(h, t0 + 1h).size() == 3);
    CHECK(due_at(h, t0 + 1h).size() == 3); // listing removes nothing
}

template <saga_store Store>
void saga_check_dropped_timeout_not_due(saga_store_harness<Store>& h) {
    using namespace store_suite;
    auto a = new_instance("s-a", "order-a");
    a.timeouts = {{"payment", t0 + 30s}};
    insert_committed(h, a);
    auto read = found(h, "s-a");
    REQUIRE(read);
    // The payment's reply came: the step ended, and its timeout with it.
    auto next = *read;
    next.state = "paid";
    next.timeouts = {{"shipping", t0 + 1h}};
    REQUIRE(write_and_commit(h, next) == write_outcome::committed);
    CHECK(due_at(h, t0 + 31s).empty());
    CHECK(due_at(h, t0 + 2h) ==
          std::vector<saga_timeout_due>{{"order", "s-a", "shipping", t0 + 1h}});
}

template <saga_store Store>
void saga_check_purge_finished(saga_store_harness<Store>& h) {
    using namespace store_suite;
    const auto finish = [&](std::string id, std::string correlation, store_time at) {
        insert_committed(h, new_instance(id, correlation));
        auto read = found(h, id);
        REQUIRE(read);
        read->finished = true;
        read->state = "completed";
        read->timeouts = {{"late", at + 1s}};
        read->updated_at = at;
        REQUIRE(write_and_commit(h, *read) == write_outcome::committed);
    };
    finish("old", "order-old", t0);
    finish("recent", "order-recent", t0 + 2h);
    auto running = new_instance("running", "order-running");
    running.updated_at = t0 - 1h; // old, but not finished
    insert_committed(h, running);

    std::error_code ec;
    CHECK(h.store.purge_finished(t0 + 1h, ec) == 1);
    CHECK(describe(ec) == success);
    CHECK_FALSE(found(h, "old"));
    CHECK(found(h, "recent"));
    CHECK(found(h, "running"));
    CHECK(saga_count(h) == 2);
    // Its timeouts went with it, and its keys are free.
    CHECK(due_at(h, t0 + 1h).empty());
    insert_committed(h, new_instance("old", "order-old"));
    CHECK(found(h, "old")->version == 1);
}

} // namespace letterbox::testing::detail

#include <letterbox/testing/detail/saga_store_concurrency_checks.hpp>
