// SPDX-License-Identifier: BSL-1.0
// Runs the outbox_store, inbox_store and saga_store conformance suites against the in-memory
// models, and shows that the outbox and saga suites fail deliberately broken stores.

#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/saga/in_memory_saga_store.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>
#include <letterbox/testing/saga_store_suite.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

namespace conformance_in_memory_stores {

namespace {

//[in_memory_outbox_fixture
struct in_memory_outbox_fixture {
    static constexpr letterbox::testing::outbox_store_features features{};

    struct context {
        letterbox::in_memory_outbox_store store_;
        letterbox::in_memory_outbox_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {}; }
};
using in_memory_outbox_fixtures = std::tuple<in_memory_outbox_fixture>;
//]

//[in_memory_inbox_fixture
struct in_memory_inbox_fixture {
    static constexpr letterbox::testing::inbox_store_features features{};

    struct context {
        letterbox::in_memory_inbox_store store_;
        letterbox::in_memory_inbox_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {}; }
};
using in_memory_inbox_fixtures = std::tuple<in_memory_inbox_fixture>;
//]

//[in_memory_saga_fixture
struct in_memory_saga_fixture {
    struct context {
        letterbox::in_memory_saga_store store_;
        letterbox::in_memory_saga_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {}; }
};
using in_memory_saga_fixtures = std::tuple<in_memory_saga_fixture>;
//]

/// A deliberately broken saga store, kept to show that the conformance suite fails it: the
/// defect of NServiceBus#4150, an in-memory saga persister that never raised a concurrency
/// error. Its update writes over whatever is stored when the unit commits, at the stored
/// version plus one, without comparing the version the writer read; a test that passes on it
/// would hide the conflicts production raises. Only what the checks below use does anything.
class last_writer_wins_saga_store {
public:
    using saga_store_concept = letterbox::saga_store_tag;
    using unit_of_work_type = letterbox::in_memory_unit_of_work;

    std::error_code insert(unit_of_work_type& u, const letterbox::saga_instance& s) {
        return write(u, s);
    }
    std::error_code update(unit_of_work_type& u, const letterbox::saga_instance& s) {
        return write(u, s);
    }
    std::optional<letterbox::saga_instance> find(std::string_view type, std::string_view id,
                                                 std::error_code& ec) {
        std::lock_guard lock(core_.mutex);
        ec.clear();
        const auto it = instances_.find(std::string(type) + '/' + std::string(id));
        return it == instances_.end() ? std::nullopt : std::optional(it->second);
    }
    std::optional<letterbox::saga_instance> find_by_correlation(std::string_view, std::string_view,
                                                                std::error_code& ec) {
        ec.clear();
        return std::nullopt;
    }
    std::size_t size(std::error_code& ec) {
        std::lock_guard lock(core_.mutex);
        ec.clear();
        return instances_.size();
    }
    std::vector<letterbox::saga_timeout_due> due_timeouts(letterbox::store_time, std::size_t,
                                                          std::error_code& ec) {
        ec.clear();
        return {};
    }
    std::size_t purge_finished(letterbox::store_time, std::error_code& ec) {
        ec.clear();
        return 0;
    }

private:
    std::error_code write(unit_of_work_type& u, const letterbox::saga_instance& s) {
        std::lock_guard lock(core_.mutex);
        const auto key = s.saga_type + '/' + s.id;
        return u.stage(core_, key + '#' + std::to_string(++writes_), nullptr, [this, key, s] {
            auto& stored = instances_[key];
            const auto version = stored.version; // the defect: whatever is there now
            stored = s;
            stored.version = version + 1;
        });
    }

    letterbox::detail::in_memory_participant core_;
    std::map<std::string, letterbox::saga_instance> instances_;
    std::size_t writes_ = 0;
};
static_assert(letterbox::saga_store<last_writer_wins_saga_store>);

struct last_writer_wins_saga_fixture {
    struct context {
        last_writer_wins_saga_store store_;
        last_writer_wins_saga_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {}; }
};

/// A deliberately broken outbox store, kept to show that the conformance suite fails it: it
/// decides whether an event must wait for its aggregate when the event is added, from the rows
/// then waiting. An event added while every earlier row of its aggregate is claimed and
/// unconfirmed finds none waiting, and is stored as unordered, so the next claim hands it out
/// while its head is still in flight. Everything else is the in-memory store's, and it passes
/// every other check of the suite (which used to add all events before the first claim).
class head_blind_outbox_store {
public:
    using outbox_store_concept = letterbox::outbox_store_tag;
    using unit_of_work_type = letterbox::in_memory_unit_of_work;

    std::error_code add(unit_of_work_type& u, const letterbox::outbox_entry& e,
                        letterbox::store_time now) {
        auto stored = e;
        if (!e.aggregate_id.empty() && only_claimed_rows_ahead(e, now)) {
            stored.aggregate_id.clear(); // the defect: ordered by nothing
            hidden_[e.msg.id] = e.aggregate_id;
        }
        return inner_.add(u, stored, now);
    }
    std::vector<letterbox::outbox_record> claim(std::string_view owner, std::size_t max_rows,
                                                letterbox::store_time::duration lease,
                                                letterbox::store_time now, std::error_code& ec) {
        return restored(inner_.claim(owner, max_rows, lease, now, ec));
    }
    std::size_t release_expired_leases(letterbox::store_time now, std::error_code& ec) {
        return inner_.release_expired_leases(now, ec);
    }
    std::error_code mark_published(const letterbox::message_id& id, std::string_view owner,
                                   letterbox::store_time now) {
        return inner_.mark_published(id, owner, now);
    }
    std::error_code mark_published(std::span<const letterbox::message_id> ids,
                                   std::string_view owner, letterbox::store_time now,
                                   std::vector<std::error_code>& results) {
        return inner_.mark_published(ids, owner, now, results);
    }
    std::error_code record_failure(const letterbox::message_id& id, std::string_view owner,
                                   std::string_view error, letterbox::store_time next_attempt_at,
                                   std::uint32_t max_attempts, letterbox::store_time now) {
        return inner_.record_failure(id, owner, error, next_attempt_at, max_attempts, now);
    }
    std::error_code park(const letterbox::message_id& id, std::string_view reason) {
        return inner_.park(id, reason);
    }
    std::error_code unpark(const letterbox::message_id& id, letterbox::store_time now) {
        return inner_.unpark(id, now);
    }
    std::size_t purge_published(letterbox::store_time older_than, std::error_code& ec) {
        return inner_.purge_published(older_than, ec);
    }
    std::optional<letterbox::outbox_record> find(const letterbox::message_id& id,
                                                 std::error_code& ec) {
        auto row = inner_.find(id, ec);
        if (row)
            restore(*row);
        return row;
    }
    std::vector<letterbox::outbox_record> list(const letterbox::outbox_query& q,
                                               std::error_code& ec) {
        return restored(inner_.list(q, ec));
    }
    letterbox::outbox_stats stats(letterbox::store_time now, std::error_code& ec) {
        return inner_.stats(now, ec);
    }

private:
    // Whether the aggregate of `e` has unpublished rows, all of them claimed (leased).
    bool only_claimed_rows_ahead(const letterbox::outbox_entry& e, letterbox::store_time now) {
        std::error_code ec;
        bool claimed = false;
        for (auto& row : restored(inner_.list({.status = letterbox::outbox_status::pending,
                         .after_sequence = 0,
                         .limit = 10'000},
                                              ec))) {
            if (row.aggregate_type != e.aggregate_type || row.aggregate_id != e.aggregate_id)
                continue;
            if (row.lease_owner.empty() || now >= row.lease_expires_at)
                return false; // a row is waiting: the new one waits too
            claimed = true;
        }
        return claimed;
    }
    void restore(letterbox::outbox_record& row) const {
        if (const auto it = hidden_.find(row.msg.id); it != hidden_.end())
            row.aggregate_id = it->second;
    }
    std::vector<letterbox::outbox_record> restored(std::vector<letterbox::outbox_record> rows) {
        for (auto& row : rows)
            restore(row);
        return rows;
    }

    letterbox::in_memory_outbox_store inner_;
    std::map<letterbox::message_id, std::string> hidden_;
};
static_assert(letterbox::outbox_store<head_blind_outbox_store>);

struct head_blind_outbox_fixture {
    struct context {
        head_blind_outbox_store store_;
        head_blind_outbox_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {}; }
};

} // namespace

LETTERBOX_OUTBOX_STORE_SUITE(in_memory_outbox_fixtures)
LETTERBOX_INBOX_STORE_SUITE(in_memory_inbox_fixtures)
LETTERBOX_SAGA_STORE_SUITE(in_memory_saga_fixtures)

TEST_CASE("a head-blind outbox store hands out an event added behind its unconfirmed head",
          "[conformance][outbox_store]") {
    using namespace std::chrono_literals;
    head_blind_outbox_store store;
    letterbox::message_id_generator ids{7};
    const auto add = [&](std::string aggregate_id) {
        letterbox::outbox_entry e;
        e.msg.id = ids();
        e.aggregate_type = "order";
        e.aggregate_id = std::move(aggregate_id);
        letterbox::in_memory_unit_of_work u;
        REQUIRE_FALSE(store.add(u, e, {}));
        REQUIRE_FALSE(u.commit());
        return e.msg.id;
    };
    std::error_code ec;
    const auto a1 = add("A");
    const auto first = store.claim("relay", 10, 30s, {}, ec);
    REQUIRE(first.size() == 1);
    CHECK(first[0].msg.id == a1);
    const auto a2 = add("A");
    const auto second = store.claim("relay", 10, 30s, {}, ec);
    REQUIRE(second.size() == 1); // the defect: a1 is claimed but unconfirmed
    CHECK(second[0].msg.id == a2);
    CHECK(second[0].aggregate_id == "A");
}

// The suite's check fails on the broken store (Catch2 reports its failed assertions, and the
// test passes because they failed); if the check ever stops catching it, this test fails.
TEST_CASE("outbox_store conformance fails a store that claims behind an unconfirmed head",
          "[conformance][outbox_store][!shouldfail]") {
    letterbox::testing::detail::run_outbox_store_check<head_blind_outbox_fixture>(
        &letterbox::testing::detail::outbox_check_event_added_behind_unconfirmed_head_waits);
}

TEST_CASE("a last-writer-wins saga store lets two writers of one version both commit",
          "[conformance][saga_store]") {
    last_writer_wins_saga_store store;
    letterbox::saga_instance s{.saga_type = "order", .id = "s-1", .correlation = "order-1"};
    {
        letterbox::in_memory_unit_of_work u;
        REQUIRE_FALSE(store.insert(u, s));
        REQUIRE_FALSE(u.commit());
    }
    std::error_code ec;
    const auto read = store.find("order", "s-1", ec);
    REQUIRE(read);
    auto a = *read;
    a.state = "a";
    auto b = *read;
    b.state = "b";
    letterbox::in_memory_unit_of_work ua;
    letterbox::in_memory_unit_of_work ub;
    REQUIRE_FALSE(store.update(ua, a));
    REQUIRE_FALSE(store.update(ub, b));
    CHECK_FALSE(ua.commit());
    CHECK_FALSE(ub.commit()); // the defect: the second writer overwrites the first
    CHECK(store.find("order", "s-1", ec)->state == "b");
}

// The suite's concurrency checks fail on the broken store (the test passes because they
// failed); if a check ever stops catching it, its test fails.
TEST_CASE("saga_store conformance fails a store that never raises a conflict on update",
          "[conformance][saga_store][!shouldfail]") {
    letterbox::testing::detail::run_saga_store_check<last_writer_wins_saga_fixture>(
        &letterbox::testing::detail::saga_check_concurrent_updates_one_commits);
}

TEST_CASE("saga_store conformance fails a store whose stale updates overwrite",
          "[conformance][saga_store][!shouldfail]") {
    letterbox::testing::detail::run_saga_store_check<last_writer_wins_saga_fixture>(
        &letterbox::testing::detail::saga_check_stale_update_conflicts);
}

} // namespace conformance_in_memory_stores
