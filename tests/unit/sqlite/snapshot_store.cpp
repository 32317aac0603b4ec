// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/snapshot_store.hpp>

#include <letterbox/error.hpp>
#include <letterbox/snapshot.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <system_error>

namespace unit_sqlite_snapshot_store {

static_assert(letterbox::snapshot_store<letterbox::sqlite::snapshot_store>);

namespace {

using letterbox_sqlite_test::open_raw;
using namespace std::chrono_literals;
using namespace std::string_literals;
using letterbox::errc;
using letterbox::snapshot;
using letterbox::store_time;
using letterbox::sqlite::connection;
using letterbox::sqlite::database;
using letterbox::sqlite::database_options;
using letterbox_sqlite_test::int_of;
using letterbox_sqlite_test::t0;
using letterbox_sqlite_test::temp_directory;

constexpr auto any_version = std::numeric_limits<std::uint64_t>::max();

/// Saves `snap` in a unit of its own, committed.
void save_committed(database& db, letterbox::sqlite::snapshot_store& store, const snapshot& snap) {
    auto uow = db.begin();
    REQUIRE_FALSE(store.save(uow, snap));
    REQUIRE_FALSE(uow.commit());
}

/// The latest committed snapshot of `stream` under the bounds, which must be read without error.
std::optional<snapshot> latest(letterbox::sqlite::snapshot_store& store, const std::string& stream,
                               std::uint64_t version = any_version,
                               store_time time = store_time::max()) {
    std::error_code ec;
    auto found = store.latest(stream, version, time, ec);
    REQUIRE_FALSE(ec);
    return found;
}

} // namespace

TEST_CASE("sqlite snapshot_store saves, replaces and finds snapshots by version and time",
          "[sqlite][snapshot_store]") {
    temp_directory dir;
    const auto path = dir.file("snapshots.db");
    auto db = database::open(path);
    letterbox::sqlite::snapshot_store store(db);
    CHECK_FALSE(latest(store, "a"));

    const snapshot v2{"a", 2, t0() + 1s, 1, R"({"balance":10})"};
    const snapshot v6{"a", 6, t0() + 3s, 1, R"({"balance":60})"};
    save_committed(db, store, v6);
    save_committed(db, store, v2);
    CHECK(latest(store, "a") == v6);
    CHECK(latest(store, "a", 5) == v2);
    CHECK(latest(store, "a", any_version, t0() + 2s) == v2);
    CHECK_FALSE(latest(store, "a", 1));
    CHECK_FALSE(latest(store, "a", any_version, t0()));

    // A newer fold retakes version 6: the row is replaced, not added.
    const snapshot refolded{"a", 6, t0() + 3s, 2, R"({"balance":60,"currency":"EUR"})"};
    save_committed(db, store, refolded);
    CHECK(latest(store, "a") == refolded);
    auto c = open_raw(path);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_snapshot") == 2);
    CHECK(int_of(c, "SELECT fold_version FROM letterbox_snapshot WHERE version = 6") == 2);

    std::error_code ec;
    CHECK(store.drop("a", ec) == 2);
    CHECK_FALSE(ec);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_snapshot") == 0);
}

TEST_CASE("sqlite snapshot_store keeps times in microseconds and compares them so",
          "[sqlite][snapshot_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("snapshots.db"));
    letterbox::sqlite::snapshot_store store(db);
    // Finer than a microsecond: dropped, rounding toward the past.
    save_committed(db, store, {"a", 1, t0() + 1500us + 999ns, 1, "{}"});
    save_committed(db, store, {"before", 1, t0() - 1500us - 1ns, 1, "{}"});

    const auto found = latest(store, "a");
    REQUIRE(found);
    CHECK(found->recorded_at == t0() + 1500us);
    CHECK(latest(store, "a", any_version, t0() + 1500us));
    CHECK_FALSE(latest(store, "a", any_version, t0() + 1499us));
    // Before the epoch too: toward the past.
    CHECK(latest(store, "before").value().recorded_at == t0() - 1501us);
    // The extreme bounds of store_time.
    CHECK_FALSE(latest(store, "a", any_version, store_time::min()));
    CHECK(latest(store, "a", any_version, store_time::max()));
}

TEST_CASE("sqlite snapshot_store keeps streams and states byte for byte, NUL bytes and UTF-8 "
          "included",
          "[sqlite][snapshot_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("snapshots.db"));
    letterbox::sqlite::snapshot_store store(db);
    const auto with_nul = "konto\0 42"s;
    const auto utf8 = "Überweisung-口座-🧾"s;
    const snapshot a{with_nul, 3, t0(), 7, "{\"note\":\"NUL \0 inside\",\"ä\":\"€\"}"s};
    const snapshot b{utf8, 1, t0(), 1, R"({"name":"口座"})"};
    save_committed(db, store, a);
    save_committed(db, store, b);

    const auto found = latest(store, with_nul);
    REQUIRE(found);
    CHECK(*found == a);
    CHECK(found->stream.size() == 9);
    CHECK(found->state.size() == a.state.size());
    CHECK(latest(store, utf8) == b);
    CHECK_FALSE(latest(store, "konto"s)); // not a prefix match
    std::error_code ec;
    CHECK(store.drop("konto"s, ec) == 0);
    CHECK(store.drop(with_nul, ec) == 1);
    CHECK_FALSE(ec);
    CHECK(latest(store, utf8) == b);
}

TEST_CASE("sqlite snapshot_store keeps snapshots across closing and reopening the file",
          "[sqlite][snapshot_store]") {
    temp_directory dir;
    const auto path = dir.file("snapshots.db");
    const snapshot kept{"account-42", 12, t0() + 7us, 3, R"({"balance":120})"};
    {
        auto db = database::open(path);
        letterbox::sqlite::snapshot_store store(db);
        save_committed(db, store, kept);
    }
    auto db = database::open(path);
    letterbox::sqlite::snapshot_store store(db);
    CHECK(latest(store, "account-42") == kept);
    CHECK(latest(store, "account-42", 12, t0() + 7us) == kept);
}

TEST_CASE("sqlite snapshot_store: reads see committed snapshots only, and never wait for an open "
          "unit",
          "[sqlite][snapshot_store]") {
    temp_directory dir;
    const auto path = dir.file("snapshots.db");
    auto db = database::open(path);
    auto second = database::open(path); // another pool on the same file
    letterbox::sqlite::snapshot_store store(db);
    letterbox::sqlite::snapshot_store reader(second);
    const snapshot v1{"a", 1, t0(), 1, "{}"};
    save_committed(db, store, v1);

    auto uow = db.begin();
    REQUIRE_FALSE(store.save(uow, {"a", 4, t0() + 1s, 1, "{}"}));
    REQUIRE_FALSE(store.save(uow, {"b", 1, t0(), 1, "{}"}));
    CHECK(int_of(uow.connection(), "SELECT count(*) FROM letterbox_snapshot") == 3);
    for (auto* s : {&store, &reader}) {
        CHECK(latest(*s, "a") == v1);
        CHECK_FALSE(latest(*s, "b"));
    }
    REQUIRE_FALSE(uow.commit());
    for (auto* s : {&store, &reader}) {
        CHECK(latest(*s, "a").value().version == 4);
        CHECK(latest(*s, "b"));
    }
}

TEST_CASE("sqlite snapshot_store refuses invalid snapshots, a foreign or finished unit and a "
          "closed database, writing nothing",
          "[sqlite][snapshot_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("snapshots.db"));
    letterbox::sqlite::snapshot_store store(db);
    constexpr auto too_large =
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1;
    const snapshot largest{"a", too_large - 1, t0(), 1, "{}"};
    {
        auto uow = db.begin();
        CHECK(store.save(uow, {"", 1, t0(), 1, "{}"}) == errc::invalid_argument);
        CHECK(store.save(uow, {"a", 0, t0(), 1, "{}"}) == errc::invalid_argument);
        CHECK(store.save(uow, {"a", too_large, t0(), 1, "{}"}) == errc::invalid_argument);
        CHECK(uow.is_open());
        REQUIRE_FALSE(store.save(uow, largest)); // the largest version SQLite stores
        REQUIRE_FALSE(uow.commit());
        CHECK(store.save(uow, {"a", 1, t0(), 1, "{}"}) == errc::transaction_closed);
    }
    CHECK(latest(store, "a") == largest);
    CHECK(latest(store, "a", too_large - 1) == largest);
    CHECK_FALSE(latest(store, "a", too_large - 2));

    std::error_code ec;
    CHECK(store.drop("", ec) == 0);
    CHECK(ec == errc::invalid_argument);

    // A unit of another database.
    auto other = database::open(dir.file("other.db"));
    {
        auto uow = other.begin();
        CHECK(store.save(uow, {"b", 1, t0(), 1, "{}"}) == errc::precondition_failed);
        CHECK(uow.is_open());
    }
    CHECK_FALSE(latest(store, "b"));

    // A database that failed to open.
    auto closed_db = database::open(dir.file("no/such/dir.db"), {}, ec);
    REQUIRE(ec);
    letterbox::sqlite::snapshot_store closed(closed_db);
    letterbox::sqlite::unit_of_work none;
    CHECK(closed.save(none, {"a", 1, t0(), 1, "{}"}) == errc::closed);
    CHECK_FALSE(closed.latest("a", any_version, store_time::max(), ec));
    CHECK(ec == errc::closed);
    CHECK(closed.drop("a", ec) == 0);
    CHECK(ec == errc::closed);
}

TEST_CASE("sqlite snapshot_store: a database error in save fails the unit, which then commits "
          "nothing",
          "[sqlite][snapshot_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("snapshots.db"));
    letterbox::sqlite::snapshot_store store(db);
    {
        auto uow = db.begin();
        REQUIRE_FALSE(store.save(uow, {"a", 1, t0(), 1, "{}"}));
        // Break the schema inside the unit: the next save has nowhere to go.
        REQUIRE_FALSE(uow.connection().exec("DROP TABLE letterbox_snapshot"));
        const auto failed = store.save(uow, {"a", 2, t0(), 1, "{}"});
        CHECK(failed == errc::store_error);
        CHECK(store.save(uow, {"b", 1, t0(), 1, "{}"}) == failed); // the unit is failed
        CHECK(uow.commit() == failed);
    }
    CHECK_FALSE(latest(store, "a")); // the save and the DROP were rolled back
    save_committed(db, store, {"a", 1, t0(), 1, "{}"});
    CHECK(latest(store, "a"));
}

} // namespace unit_sqlite_snapshot_store
