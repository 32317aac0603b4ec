// SPDX-License-Identifier: BSL-1.0
// Loading event-sourced aggregates from snapshots and events, at the head, at a version and at a
// time, on the in-memory stores: each load is compared with a full replay of the stream.

#include <letterbox/event_sourcing/aggregate_repository.hpp>

#include <letterbox/event_sourcing/in_memory_event_store.hpp>
#include <letterbox/event_sourcing/in_memory_snapshot_store.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>

#include "account.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

namespace unit_event_sourcing_aggregate_repository {

using namespace std::chrono_literals;
namespace lb = letterbox;
using unit_event_sourcing::account;
using unit_event_sourcing::account_fold;
using unit_event_sourcing::account_fold_v2;
using unit_event_sourcing::movement;
using unit_event_sourcing::replay;

namespace {

constexpr lb::store_time t0{std::chrono::sys_days{std::chrono::year{2026} / 12 / 1}};

template <class Fold = account_fold>
using repository =
    lb::aggregate_repository<Fold, lb::in_memory_event_store, lb::in_memory_snapshot_store>;

struct world {
    lb::in_memory_event_store events;
    lb::in_memory_snapshot_store snapshots;
    lb::message_id_generator ids{22};

    // Loads the account and deposits `amount` at `at` (a withdrawal when negative), as a
    // command handler would; the unit must commit.
    template <class Fold = account_fold>
    void move(repository<Fold>& accounts, std::int64_t amount, lb::store_time at,
              std::string stream = "account-1") {
        std::error_code ec;
        auto a = accounts.load(stream, ec);
        REQUIRE_FALSE(ec);
        const std::vector<lb::event_data> e{
            movement(ids, amount >= 0 ? "deposited" : "withdrawn", amount >= 0 ? amount : -amount)};
        lb::append_result r;
        auto u = events.begin();
        REQUIRE_FALSE(accounts.append(u, a, e, at, r));
        REQUIRE_FALSE(u.commit());
    }

    std::vector<lb::recorded_event> stream(std::string name = "account-1") {
        std::error_code ec;
        auto all = events.read_stream(name, 0, 100000, ec);
        REQUIRE_FALSE(ec);
        return all;
    }
};

} // namespace

TEST_CASE("an aggregate of a stream without events loads as its initial state",
          "[event_sourcing][aggregate_repository]") {
    world w;
    repository<> accounts(w.events, w.snapshots);
    std::error_code ec;
    const auto a = accounts.load("account-9", ec);
    CHECK_FALSE(ec);
    CHECK(a.stream == "account-9");
    CHECK(a.state == account{});
    CHECK(a.version == 0);
    CHECK(a.events_folded == 0);
}

TEST_CASE("a loaded aggregate folds every event of its stream",
          "[event_sourcing][aggregate_repository]") {
    world w;
    repository<> accounts(w.events, w.snapshots);
    w.move(accounts, 100, t0);
    w.move(accounts, -30, t0 + 1s);
    w.move(accounts, 5, t0 + 2s);
    std::error_code ec;
    const auto a = accounts.load("account-1", ec);
    CHECK_FALSE(ec);
    CHECK(a.state == account{75, 3});
    CHECK(a.version == 3);
    CHECK(a.position == 3);
    CHECK(a.recorded_at == t0 + 2s);
    CHECK(a.events_folded == 3);
    CHECK(a.snapshot_version == 0);
}

TEST_CASE("an append from a stale aggregate conflicts and writes nothing",
          "[event_sourcing][aggregate_repository]") {
    world w;
    repository<> accounts(w.events, w.snapshots);
    w.move(accounts, 100, t0);
    std::error_code ec;
    const auto first = accounts.load("account-1", ec);
    const auto second = accounts.load("account-1", ec);
    const std::vector<lb::event_data> e1{movement(w.ids, "withdrawn", 80)};
    const std::vector<lb::event_data> e2{movement(w.ids, "withdrawn", 70)};
    lb::append_result r;
    {
        auto u = w.events.begin();
        REQUIRE_FALSE(accounts.append(u, first, e1, t0, r));
        REQUIRE_FALSE(u.commit());
    }
    auto u = w.events.begin();
    CHECK(accounts.append(u, second, e2, t0, r) == lb::errc::concurrency_conflict);
    CHECK(r.version == 2); // the current version is reported
    REQUIRE_FALSE(u.commit());
    CHECK(accounts.load("account-1", ec).state == account{20, 2}); // never overdrawn
}

TEST_CASE("snapshots are taken every N events and a load reads only the events after one",
          "[event_sourcing][aggregate_repository]") {
    world w;
    repository<> accounts(w.events, w.snapshots, {.snapshot_every = 5});
    for (int i = 0; i < 12; ++i)
        w.move(accounts, 10 + i, t0 + std::chrono::seconds(i));
    std::error_code ec;
    // The snapshots hold the state after event 5 and after event 10.
    const auto at10 = w.snapshots.latest("account-1", 11, lb::store_time::max(), ec);
    REQUIRE(at10);
    CHECK(at10->version == 10);
    CHECK(at10->recorded_at == t0 + 9s);
    CHECK(at10->fold_version == 1);
    const auto at5 = w.snapshots.latest("account-1", 9, lb::store_time::max(), ec);
    REQUIRE(at5);
    CHECK(at5->version == 5);

    const auto a = accounts.load("account-1", ec);
    CHECK_FALSE(ec);
    CHECK(a.snapshot_version == 10);
    CHECK(a.events_folded == 2);
    CHECK(a.version == 12);
    const auto all = w.stream();
    CHECK(a.state == replay(all)); // loading with snapshots equals loading without
    lb::in_memory_snapshot_store none;
    repository<> replaying(w.events, none);
    CHECK(replaying.load("account-1", ec).state == a.state);
}

TEST_CASE("an aggregate loads as of a version or a time, from a snapshot no later than that",
          "[event_sourcing][aggregate_repository]") {
    world w;
    repository<> accounts(w.events, w.snapshots, {.snapshot_every = 4, .read_batch = 3});
    for (int i = 0; i < 10; ++i)
        w.move(accounts, i % 3 == 2 ? -5 : 20, t0 + std::chrono::seconds(10 * i));
    const auto all = w.stream();
    std::error_code ec;
    for (std::uint64_t v = 0; v <= 11; ++v) {
        INFO("version " << v);
        const auto a = accounts.load_at_version("account-1", v, ec);
        CHECK_FALSE(ec);
        const auto n = std::min<std::uint64_t>(v, all.size());
        CHECK(a.version == n);
        CHECK(a.state == replay(std::vector<lb::recorded_event>(
                             all.begin(), all.begin() + static_cast<long>(n))));
        CHECK(a.snapshot_version <= n);
        CHECK(a.snapshot_version == (n >= 8 ? 8 : n >= 4 ? 4 : 0));
    }
    for (int s = -5; s <= 100; s += 5) {
        const auto t = t0 + std::chrono::seconds(s);
        INFO("time t0 + " << s << " s");
        const auto a = accounts.load_at_time("account-1", t, ec);
        CHECK_FALSE(ec);
        std::vector<lb::recorded_event> until;
        for (const auto& e : all)
            if (e.recorded_at <= t)
                until.push_back(e);
        CHECK(a.version == until.size());
        CHECK(a.state == replay(until));
        CHECK(a.recorded_at <= t);
    }
}

TEST_CASE("a snapshot of another fold version is ignored and retaken, never applied",
          "[event_sourcing][aggregate_repository]") {
    world w;
    repository<> v1(w.events, w.snapshots, {.snapshot_every = 3});
    for (int i = 0; i < 4; ++i)
        w.move(v1, 1, t0);
    std::error_code ec;
    REQUIRE(v1.load("account-1", ec).snapshot_version == 3);

    repository<account_fold_v2> v2(w.events, w.snapshots, {.snapshot_every = 3});
    const auto a = v2.load("account-1", ec);
    CHECK_FALSE(ec);
    CHECK(a.snapshot_ignored);
    CHECK(a.snapshot_version == 0);
    CHECK(a.events_folded == 4);
    CHECK(a.state == replay<account_fold_v2>(w.stream()));
    // Its next append takes a snapshot of its own fold version, which its loads then use.
    w.move(v2, 1, t0);
    const auto b = v2.load("account-1", ec);
    CHECK_FALSE(b.snapshot_ignored);
    CHECK(b.snapshot_version == 4);
    CHECK(b.state == replay<account_fold_v2>(w.stream()));
    // And the first fold ignores that one.
    const auto c = v1.load("account-1", ec);
    CHECK(c.snapshot_ignored);
    CHECK(c.state == replay(w.stream()));
}

TEST_CASE("a snapshot whose state does not parse is ignored",
          "[event_sourcing][aggregate_repository]") {
    world w;
    repository<> accounts(w.events, w.snapshots);
    w.move(accounts, 7, t0);
    w.move(accounts, 8, t0);
    for (const auto* state : {"not json", R"({"balance":"many"})"}) {
        INFO(state);
        auto u = w.snapshots.begin();
        REQUIRE_FALSE(w.snapshots.save(u, {"account-1", 2, t0, 1, state}));
        REQUIRE_FALSE(u.commit());
        std::error_code ec;
        const auto a = accounts.load("account-1", ec);
        CHECK_FALSE(ec);
        CHECK(a.snapshot_ignored);
        CHECK(a.state == account{15, 2});
    }
}

TEST_CASE("an event store error fails the load, a snapshot store error does not",
          "[event_sourcing][aggregate_repository]") {
    world w;
    repository<> accounts(w.events, w.snapshots);
    w.move(accounts, 7, t0);
    std::error_code ec;
    w.events.fail_nth(0);
    accounts.load("account-1", ec);
    CHECK(ec == lb::errc::internal_error);
    // A snapshot is a cache: when it cannot be read, the load folds the events.
    w.snapshots.fail_nth(0);
    const auto a = accounts.load("account-1", ec);
    CHECK_FALSE(ec);
    CHECK(a.snapshot_ignored);
    CHECK(a.state == account{7, 1});
    CHECK(accounts.load("account-1", ec).state == account{7, 1});
    CHECK_FALSE(ec);
}

namespace {

/// A fold whose state keeps the last event's type: text JSON cannot hold when it is not UTF-8.
struct last_type {
    std::string type;
};
void to_json(nlohmann::json& j, const last_type& s) {
    j = nlohmann::json{{"type", s.type}};
}
void from_json(const nlohmann::json& j, last_type& s) {
    s.type = j.at("type").get<std::string>();
}
struct last_type_fold {
    using state_type = last_type;
    static constexpr std::uint32_t fold_version = 1;
    void apply(last_type& s, const lb::recorded_event& e) const { s.type = e.type; }
};

/// An event store that gives at most two events per read, whatever the limit: the concept
/// promises "at most `limit`", not "`limit` unless at the end".
struct short_pages : lb::in_memory_event_store {
    std::vector<lb::recorded_event> read_stream(std::string_view stream, std::uint64_t after,
                                                std::size_t limit, std::error_code& ec) {
        return in_memory_event_store::read_stream(stream, after, std::min<std::size_t>(limit, 2),
                                                  ec);
    }
};

} // namespace

TEST_CASE("a state JSON cannot hold is not snapshotted, and never fails the append",
          "[event_sourcing][aggregate_repository]") {
    world w;
    lb::aggregate_repository<last_type_fold, lb::in_memory_event_store,
                             lb::in_memory_snapshot_store>
        types(w.events, w.snapshots, {.snapshot_every = 1});
    for (const auto* type : {"caf\xe9", "ok", "again"}) { // Latin-1, not UTF-8
        std::error_code ec;
        const auto a = types.load("s", ec);
        REQUIRE_FALSE(ec);
        const std::vector<lb::event_data> e{movement(w.ids, type, 1)};
        lb::append_result r;
        auto u = w.events.begin();
        CHECK_FALSE(types.append(u, a, e, t0, r));
        REQUIRE_FALSE(u.commit());
    }
    std::error_code ec;
    CHECK(w.events.stream_version("s", ec) == 3);
    const auto a = types.load("s", ec);
    CHECK(a.state.type == "again");
    CHECK(a.snapshot_version == 2); // the state after "ok" could be kept
}

TEST_CASE("a load reads until the stream ends, not until a short page",
          "[event_sourcing][aggregate_repository]") {
    short_pages events;
    lb::in_memory_snapshot_store snapshots;
    lb::aggregate_repository<account_fold, short_pages, lb::in_memory_snapshot_store> accounts(
        events, snapshots, {.read_batch = 5});
    lb::message_id_generator ids{3};
    for (int i = 0; i < 7; ++i) {
        std::error_code ec;
        const auto a = accounts.load("account-1", ec);
        const std::vector<lb::event_data> e{movement(ids, "deposited", 10)};
        lb::append_result r;
        auto u = events.begin();
        REQUIRE_FALSE(accounts.append(u, a, e, t0, r));
        REQUIRE_FALSE(u.commit());
    }
    std::error_code ec;
    const auto a = accounts.load("account-1", ec);
    CHECK(a.version == 7);
    CHECK(a.state == account{70, 7});
    CHECK(accounts.load_at_version("account-1", 5, ec).state == account{50, 5});
}

} // namespace unit_event_sourcing_aggregate_repository
