// SPDX-License-Identifier: BSL-1.0
// Runs the event_store, snapshot_store and checkpoint_store conformance suites against the
// in-memory models, and shows that the event_store and checkpoint_store suites fail deliberately
// broken stores.

#include <letterbox/event_sourcing/in_memory_checkpoint_store.hpp>
#include <letterbox/event_sourcing/in_memory_event_store.hpp>
#include <letterbox/event_sourcing/in_memory_snapshot_store.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/testing/checkpoint_store_suite.hpp>
#include <letterbox/testing/event_store_suite.hpp>
#include <letterbox/testing/snapshot_store_suite.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <vector>

namespace conformance_in_memory_event_store {

namespace {

//[in_memory_event_fixture
struct in_memory_event_fixture {
    struct context {
        letterbox::in_memory_event_store store_;
        letterbox::in_memory_event_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return store_.begin(); }
    };
    static context make() { return {}; }
};
using in_memory_event_fixtures = std::tuple<in_memory_event_fixture>;
//]

//[in_memory_snapshot_fixture
struct in_memory_snapshot_fixture {
    struct context {
        letterbox::in_memory_snapshot_store store_;
        letterbox::in_memory_snapshot_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return store_.begin(); }
    };
    static context make() { return {}; }
};
using in_memory_snapshot_fixtures = std::tuple<in_memory_snapshot_fixture>;
//]

//[in_memory_checkpoint_fixture
struct in_memory_checkpoint_fixture {
    struct context {
        letterbox::in_memory_checkpoint_store store_;
        letterbox::in_memory_checkpoint_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return store_.begin(); }
    };
    static context make() { return {}; }
};
using in_memory_checkpoint_fixtures = std::tuple<in_memory_checkpoint_fixture>;
//]

/// A deliberately broken event store, kept to show that the conformance suite fails it: it
/// checks the expected version when `append` is called but not again at commit, and it takes
/// positions from a counter when `append` is called, so a rollback leaves a gap and a unit
/// that commits later can land below a position a reader has passed.
class check_once_event_store {
public:
    using event_store_concept = letterbox::event_store_tag;
    using unit_of_work_type = letterbox::in_memory_unit_of_work;

    std::error_code append(unit_of_work_type& u, std::string_view stream,
                           letterbox::expected_version expected,
                           std::span<const letterbox::event_data> events, letterbox::store_time now,
                           letterbox::append_result& result) {
        std::lock_guard lock(core_.mutex);
        const auto current = streams_[std::string(stream)].size();
        if (!expected.admits(current))
            return letterbox::errc::concurrency_conflict;
        for (const auto& e : events) {
            letterbox::recorded_event r{
                std::string(stream), 0, ++next_position_, e.id, e.type, e.data, e.metadata, now};
            result.position = r.position;
            if (auto ec = u.stage(core_, std::string(stream), nullptr, [this, r]() mutable {
                    auto& s = streams_[r.stream];
                    r.version = s.size() + 1;
                    s.push_back(r);
                    log_.emplace(r.position, r);
                }))
                return ec;
        }
        result.version = current + events.size();
        return {};
    }
    std::vector<letterbox::recorded_event> read_stream(std::string_view stream, std::uint64_t after,
                                                       std::size_t limit, std::error_code& ec) {
        std::lock_guard lock(core_.mutex);
        ec.clear();
        std::vector<letterbox::recorded_event> out;
        for (const auto& e : streams_[std::string(stream)])
            if (e.version > after && out.size() < limit)
                out.push_back(e);
        return out;
    }
    std::vector<letterbox::recorded_event> read_all(std::uint64_t after, std::size_t limit,
                                                    std::error_code& ec) {
        std::lock_guard lock(core_.mutex);
        ec.clear();
        std::vector<letterbox::recorded_event> out;
        for (auto it = log_.upper_bound(after); it != log_.end() && out.size() < limit; ++it)
            out.push_back(it->second);
        return out;
    }
    std::uint64_t stream_version(std::string_view stream, std::error_code& ec) {
        std::lock_guard lock(core_.mutex);
        ec.clear();
        return streams_[std::string(stream)].size();
    }
    std::uint64_t head_position(std::error_code& ec) {
        std::lock_guard lock(core_.mutex);
        ec.clear();
        return log_.empty() ? 0 : log_.rbegin()->first;
    }

private:
    letterbox::detail::in_memory_participant core_;
    std::uint64_t next_position_ = 0;
    std::map<std::string, std::vector<letterbox::recorded_event>> streams_;
    std::map<std::uint64_t, letterbox::recorded_event> log_;
};

static_assert(letterbox::event_store<check_once_event_store>);

struct check_once_event_fixture {
    struct context {
        check_once_event_store store_;
        check_once_event_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {}; }
};

/// A deliberately broken checkpoint store, kept to show that the conformance suite fails it: it
/// compares the expected position when `save` is called but not again at commit, so two runners
/// that read one checkpoint both move it.
class check_once_checkpoint_store {
public:
    using checkpoint_store_concept = letterbox::checkpoint_store_tag;
    using unit_of_work_type = letterbox::in_memory_unit_of_work;

    std::uint64_t position(std::string_view name, std::error_code& ec) {
        std::lock_guard lock(core_.mutex);
        ec.clear();
        return positions_[std::string(name)];
    }
    std::error_code save(unit_of_work_type& u, std::string_view name, std::uint64_t expected,
                         std::uint64_t position) {
        std::lock_guard lock(core_.mutex);
        if (name.empty())
            return letterbox::errc::invalid_argument;
        if (positions_[std::string(name)] != expected)
            return letterbox::errc::concurrency_conflict;
        return u.stage(core_, std::string(name), nullptr,
                       [this, key = std::string(name), position] { positions_[key] = position; });
    }

private:
    letterbox::detail::in_memory_participant core_;
    std::map<std::string, std::uint64_t> positions_;
};

static_assert(letterbox::checkpoint_store<check_once_checkpoint_store>);

struct check_once_checkpoint_fixture {
    struct context {
        check_once_checkpoint_store store_;
        check_once_checkpoint_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {}; }
};

} // namespace

LETTERBOX_EVENT_STORE_SUITE(in_memory_event_fixtures)
LETTERBOX_SNAPSHOT_STORE_SUITE(in_memory_snapshot_fixtures)
LETTERBOX_CHECKPOINT_STORE_SUITE(in_memory_checkpoint_fixtures)

TEST_CASE("an in-memory event store's fault injection fails one operation with no effect",
          "[conformance][event_store]") {
    letterbox::in_memory_event_store store;
    const std::vector<letterbox::event_data> events{
        {.id = {}, .type = "opened", .data = "{}", .metadata = ""}};
    letterbox::append_result result;
    store.fail_nth(1); // the commit
    auto u = store.begin();
    REQUIRE_FALSE(store.append(u, "a", letterbox::expected_version::any(), events, {}, result));
    CHECK(u.commit() == letterbox::errc::internal_error);
    std::error_code ec;
    CHECK(store.head_position(ec) == 0);
    CHECK_FALSE(ec);
    CHECK(result == letterbox::append_result{});
}

// The suite's checks fail on the broken store (Catch2 reports their failed assertions, and the
// test passes because they failed); if a check ever stops catching it, its test fails.
TEST_CASE("event_store conformance fails a store that checks the version only at append",
          "[conformance][event_store][!shouldfail]") {
    letterbox::testing::detail::run_event_store_check<check_once_event_fixture>(
        &letterbox::testing::detail::event_check_overlapping_appends_one_commits);
}

TEST_CASE("event_store conformance fails a store whose rollback consumes positions",
          "[conformance][event_store][!shouldfail]") {
    letterbox::testing::detail::run_event_store_check<check_once_event_fixture>(
        &letterbox::testing::detail::event_check_rollback_leaves_no_trace);
}

TEST_CASE("event_store conformance fails a store whose positions follow append order",
          "[conformance][event_store][!shouldfail]") {
    letterbox::testing::detail::run_event_store_check<check_once_event_fixture>(
        &letterbox::testing::detail::event_check_positions_follow_commit_order);
}

TEST_CASE("event_store conformance fails a store whose positions do not follow commit order",
          "[conformance][event_store][!shouldfail][threads]") {
    letterbox::testing::detail::run_event_store_check<check_once_event_fixture>(
        &letterbox::testing::detail::event_check_catch_up_reader_misses_nothing);
}

TEST_CASE("checkpoint_store conformance fails a store that compares the position only at save",
          "[conformance][checkpoint_store][!shouldfail]") {
    letterbox::testing::detail::run_checkpoint_store_check<check_once_checkpoint_fixture>(
        &letterbox::testing::detail::checkpoint_check_overlapping_saves_one_commits);
}

} // namespace conformance_in_memory_event_store
