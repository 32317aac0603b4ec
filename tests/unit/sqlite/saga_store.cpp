// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/saga_store.hpp>

#include <letterbox/error.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/schema.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_sqlite_saga_store {

static_assert(letterbox::saga_store<letterbox::sqlite::saga_store>);

namespace {

using letterbox_sqlite_test::install_schema;
using letterbox_sqlite_test::open_raw;
using namespace std::chrono_literals;
using namespace std::string_literals;
using letterbox::errc;
using letterbox::saga_instance;
using letterbox::saga_timeout;
using letterbox::sqlite::connection;
using letterbox::sqlite::database;
using letterbox::sqlite::database_options;
using letterbox::sqlite::schema;
using letterbox_sqlite_test::int_of;
using letterbox_sqlite_test::t0;
using letterbox_sqlite_test::temp_directory;

constexpr auto order_saga = "order-fulfilment";

/// A new instance of the order saga, never stored (version 0), last written at t0.
saga_instance order(const std::string& id, const std::string& correlation,
                    std::vector<saga_timeout> timeouts = {}) {
    saga_instance s;
    s.saga_type = order_saga;
    s.id = id;
    s.correlation = correlation;
    s.state = "started";
    s.data = R"({"total":42})";
    s.timeouts = std::move(timeouts);
    s.updated_at = t0();
    return s;
}

/// The committed instance of the order saga with this id; fails the test when there is none.
saga_instance stored(letterbox::sqlite::saga_store& store, const std::string& id) {
    std::error_code ec;
    auto found = store.find(order_saga, id, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(found.has_value());
    return *found;
}

/// The due timeouts as "id/name", for readable failures.
std::vector<std::string> due_names(letterbox::sqlite::saga_store& store, letterbox::store_time now,
                                   std::size_t limit = 100) {
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& due : store.due_timeouts(now, limit, ec))
        names.push_back(due.id + "/" + due.name);
    REQUIRE_FALSE(ec);
    return names;
}

} // namespace

TEST_CASE("sqlite saga_store: schema step 4 adds the saga tables to a version 3 database and "
          "keeps its rows",
          "[sqlite][saga_store]") {
    REQUIRE(schema::migrations().size() >= 4);
    CHECK(schema::migrations()[3].version == 4);
    CHECK(schema::migrations()[3].description == "saga instances and their timeouts");

    temp_directory dir;
    const auto path = dir.file("v3.db");
    {
        // Version 3, as the previous release left it, with an inbox record.
        auto c = open_raw(path);
        REQUIRE_FALSE(c.exec("BEGIN"));
        install_schema(c, 3);
        REQUIRE_FALSE(c.exec("INSERT INTO letterbox_inbox VALUES ('billing', x'00', 0)"));
        REQUIRE_FALSE(c.exec("COMMIT"));
        CHECK(int_of(c, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'letterbox_saga%'") ==
              0);
    }

    auto db = database::open(path); // migrates
    auto c = open_raw(path);
    CHECK(int_of(c, "SELECT version FROM letterbox_schema_version") == schema::latest_version());
    CHECK(int_of(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                    "('letterbox_saga', 'letterbox_saga_timeout')") == 2);
    CHECK(int_of(c,
                 "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
                 "('letterbox_saga_finished_updated_at', 'letterbox_saga_timeout_due_at')") == 2);
    CHECK(int_of(c, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = "
                    "'letterbox_saga_deleted'") == 1);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_inbox") == 1);

    letterbox::sqlite::saga_store store(db);
    auto uow = store.begin();
    REQUIRE_FALSE(store.insert(uow, order("o-1", "order-1", {{"payment", t0() + 30s}})));
    REQUIRE_FALSE(uow.commit());
    CHECK(stored(store, "o-1").version == 1);
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_saga_timeout") == 1);
}

TEST_CASE("sqlite saga_store: a taken id or correlation is a concurrency_conflict that leaves "
          "the unit usable, and the rest of the unit commits",
          "[sqlite][saga_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("sagas.db"));
    letterbox::sqlite::saga_store store(db);
    {
        auto uow = db.begin();
        REQUIRE_FALSE(store.insert(uow, order("a", "order-1")));
        REQUIRE_FALSE(uow.commit());
    }

    auto uow = db.begin();
    // Committed keys.
    CHECK(store.insert(uow, order("a", "order-2")) == errc::concurrency_conflict);
    CHECK(store.insert(uow, order("b", "order-1")) == errc::concurrency_conflict);
    // Keys are within a saga type.
    auto payment = order("a", "order-1");
    payment.saga_type = "payment";
    CHECK_FALSE(store.insert(uow, payment));
    // Keys staged in this unit.
    CHECK_FALSE(store.insert(uow, order("b", "order-2", {{"payment", t0() + 30s}})));
    CHECK(store.insert(uow, order("b", "order-3")) == errc::concurrency_conflict);
    CHECK(store.insert(uow, order("c", "order-2")) == errc::concurrency_conflict);
    // A write of the staged b from version 0 (it is at 1), and a second write of a from the
    // version the first one read.
    auto b = order("b", "order-2");
    b.state = "lost";
    CHECK(store.update(uow, b) == errc::concurrency_conflict);
    auto a = stored(store, "a");
    a.state = "paid";
    a.correlation = "order-9"; // ignored: the correlation is the instance's for life
    CHECK_FALSE(store.update(uow, a));
    a.state = "paid twice";
    CHECK(store.update(uow, a) == errc::concurrency_conflict);
    CHECK(uow.is_open());

    // Reads see committed instances only.
    std::error_code ec;
    CHECK_FALSE(store.find(order_saga, "b", ec).has_value());
    CHECK_FALSE(ec);
    CHECK(store.size(ec) == 1);
    CHECK(stored(store, "a").version == 1);

    REQUIRE_FALSE(uow.commit());
    CHECK(store.size(ec) == 3);
    const auto committed_a = stored(store, "a");
    CHECK(committed_a.version == 2);
    CHECK(committed_a.state == "paid");
    CHECK(committed_a.correlation == "order-1");
    const auto committed_b = stored(store, "b");
    CHECK(committed_b.version == 1);
    CHECK(committed_b.state == "started");
    CHECK(committed_b.timeouts == std::vector<saga_timeout>{{"payment", t0() + 30s}});
    CHECK(store.find_by_correlation(order_saga, "order-2", ec) == committed_b);
    CHECK_FALSE(store.find_by_correlation(order_saga, "order-9", ec).has_value());
    CHECK(store.find("payment", "a", ec).value_or(saga_instance{}).correlation == "order-1");
    CHECK_FALSE(ec);
}

TEST_CASE("sqlite saga_store: update replaces the timeouts, and purge_finished deletes them with "
          "the instance",
          "[sqlite][saga_store]") {
    temp_directory dir;
    const auto path = dir.file("sagas.db");
    auto db = database::open(path);
    letterbox::sqlite::saga_store store(db);
    auto raw = open_raw(path);
    const auto commit = [&](auto&& write) {
        auto uow = db.begin();
        REQUIRE_FALSE(write(uow));
        REQUIRE_FALSE(uow.commit());
    };
    commit([&](auto& uow) {
        return store.insert(
            uow, order("a", "order-1",
                       {{"remind", t0() + 20s}, {"payment", t0() + 10s}, {"audit", t0() + 10s}}));
    });
    commit([&](auto& uow) { return store.insert(uow, order("b", "order-2", {{"x", t0() + 1s}})); });

    // By due time, then name.
    CHECK(stored(store, "a").timeouts == std::vector<saga_timeout>{{"audit", t0() + 10s},
                                                                   {"payment", t0() + 10s},
                                                                   {"remind", t0() + 20s}});
    CHECK(due_names(store, t0() + 10s) == std::vector<std::string>{"b/x", "a/audit", "a/payment"});
    CHECK(due_names(store, t0() + 30s, 2) == std::vector<std::string>{"b/x", "a/audit"});
    CHECK(due_names(store, t0()).empty());

    auto a = stored(store, "a");
    a.state = "shipping";
    a.timeouts = {{"ship", t0() + 5s}};
    commit([&](auto& uow) { return store.update(uow, a); });
    CHECK(stored(store, "a").timeouts == std::vector<saga_timeout>{{"ship", t0() + 5s}});
    CHECK(int_of(raw, "SELECT count(*) FROM letterbox_saga_timeout WHERE id = 'a'") == 1);
    CHECK(due_names(store, t0() + 30s) == std::vector<std::string>{"b/x", "a/ship"});

    a = stored(store, "a");
    a.state = "done";
    a.finished = true;
    a.updated_at = t0() + 1min;
    a.timeouts = {{"late", t0() + 1h}};
    commit([&](auto& uow) { return store.update(uow, a); });

    std::error_code ec;
    CHECK(store.purge_finished(t0() + 1min, ec) == 0); // not before
    CHECK_FALSE(ec);
    CHECK(store.purge_finished(t0() + 2min, ec) == 1); // b is older, but not finished
    CHECK_FALSE(ec);
    CHECK_FALSE(store.find(order_saga, "a", ec).has_value());
    CHECK(store.size(ec) == 1);
    CHECK(int_of(raw, "SELECT count(*) FROM letterbox_saga_timeout WHERE id = 'a'") == 0);
    CHECK(due_names(store, t0() + 2h) == std::vector<std::string>{"b/x"});

    // A purged instance's id and correlation are free again.
    commit([&](auto& uow) { return store.insert(uow, order("a", "order-1")); });
    CHECK(stored(store, "a").version == 1);
    CHECK(stored(store, "a").timeouts.empty());
}

TEST_CASE("sqlite saga_store keeps instances and their timeouts across a reopen",
          "[sqlite][saga_store]") {
    temp_directory dir;
    const auto path = dir.file("sagas.db");
    saga_instance expected = order("o-7", "order \0 7"s, {{"payment", t0() + 30s}});
    expected.data = "{\"note\":\"NUL \0 inside\"}"s;
    {
        auto db = database::open(path);
        letterbox::sqlite::saga_store store(db);
        {
            auto uow = db.begin();
            REQUIRE_FALSE(store.insert(uow, expected));
            REQUIRE_FALSE(uow.commit());
        }
        expected.version = 1;
        expected.state = "awaiting-shipment";
        expected.timeouts = {{"shipment", t0() + 2h}, {"escalate", t0() + 1h}};
        expected.updated_at = t0() + 1500us;
        auto uow = db.begin();
        REQUIRE_FALSE(store.update(uow, expected));
        REQUIRE_FALSE(uow.commit());
    }
    // What the store gives back: the next version, the timeouts by due time.
    expected.version = 2;
    expected.timeouts = {{"escalate", t0() + 1h}, {"shipment", t0() + 2h}};

    auto db = database::open(path);
    letterbox::sqlite::saga_store store(db);
    std::error_code ec;
    CHECK(store.find(order_saga, "o-7", ec) == expected);
    CHECK(store.find_by_correlation(order_saga, "order \0 7"s, ec) == expected);
    CHECK_FALSE(store.find_by_correlation(order_saga, "order ", ec).has_value());
    CHECK(store.size(ec) == 1);
    CHECK_FALSE(ec);
    CHECK(due_names(store, t0() + 3h) == std::vector<std::string>{"o-7/escalate", "o-7/shipment"});

    // The versions carry on: a write from the version before the restart is stale.
    auto uow = db.begin();
    auto stale = expected;
    stale.version = 1;
    CHECK(store.update(uow, stale) == errc::concurrency_conflict);
    CHECK_FALSE(store.update(uow, expected));
    REQUIRE_FALSE(uow.commit());
    CHECK(stored(store, "o-7").version == 3);
}

TEST_CASE("sqlite saga_store refuses invalid arguments, a foreign or finished unit and a closed "
          "database, writing nothing",
          "[sqlite][saga_store]") {
    temp_directory dir;
    auto db = database::open(dir.file("sagas.db"));
    letterbox::sqlite::saga_store store(db);
    {
        auto uow = db.begin();
        auto versioned = order("a", "order-1");
        versioned.version = 1;
        CHECK(store.insert(uow, versioned) == errc::precondition_failed);
        CHECK(store.insert(uow, order("", "order-1")) == errc::invalid_argument);
        CHECK(store.insert(uow, order("a", "")) == errc::invalid_argument);
        auto untyped = order("a", "order-1");
        untyped.saga_type.clear();
        CHECK(store.insert(uow, untyped) == errc::invalid_argument);
        const std::vector<saga_timeout> twice = {{"payment", t0() + 1s}, {"payment", t0() + 2s}};
        CHECK(store.insert(uow, order("a", "order-1", twice)) == errc::invalid_argument);

        REQUIRE_FALSE(store.insert(uow, order("a", "order-1", {{"payment", t0() + 1s}})));
        auto a = order("a", "order-1", twice);
        a.version = 1;
        a.state = "changed";
        CHECK(store.update(uow, a) == errc::invalid_argument);
        CHECK(uow.is_open());
        REQUIRE_FALSE(uow.commit());
        // The unit is finished.
        CHECK(store.insert(uow, order("b", "order-2")) == errc::transaction_closed);
        CHECK(store.update(uow, a) == errc::transaction_closed);
    }
    std::error_code ec;
    CHECK(store.size(ec) == 1);
    const auto a = stored(store, "a");
    CHECK(a.state == "started");
    CHECK(a.version == 1);
    CHECK(a.timeouts == std::vector<saga_timeout>{{"payment", t0() + 1s}});

    // A unit of another database.
    auto other = database::open(dir.file("other.db"));
    {
        auto uow = other.begin();
        CHECK(store.insert(uow, order("b", "order-2")) == errc::precondition_failed);
        CHECK(store.update(uow, a) == errc::precondition_failed);
    }
    CHECK(store.size(ec) == 1);

    // A database that failed to open.
    auto closed_db = database::open(dir.file("no/such/dir.db"), {}, ec);
    REQUIRE(ec);
    letterbox::sqlite::saga_store closed(closed_db);
    letterbox::sqlite::unit_of_work none;
    CHECK(closed.insert(none, order("b", "order-2")) == errc::closed);
    CHECK(closed.update(none, a) == errc::closed);
    CHECK_FALSE(closed.find(order_saga, "a", ec).has_value());
    CHECK(ec == errc::closed);
    CHECK_FALSE(closed.find_by_correlation(order_saga, "order-1", ec).has_value());
    CHECK(ec == errc::closed);
    CHECK(closed.size(ec) == 0);
    CHECK(ec == errc::closed);
    CHECK(closed.due_timeouts(t0() + 1h, 10, ec).empty());
    CHECK(ec == errc::closed);
    CHECK(closed.purge_finished(t0() + 1h, ec) == 0);
    CHECK(ec == errc::closed);
}

TEST_CASE("sqlite saga_store: a database error in a write fails the unit, which then commits "
          "nothing",
          "[sqlite][saga_store]") {
    temp_directory dir;
    const auto path = dir.file("sagas.db");
    auto db = database::open(path);
    letterbox::sqlite::saga_store store(db);
    {
        auto uow = db.begin();
        REQUIRE_FALSE(store.insert(uow, order("a", "order-1")));
        // Break the schema inside the unit: the next write's timeouts have nowhere to go.
        REQUIRE_FALSE(uow.connection().exec("DROP TABLE letterbox_saga_timeout"));
        const auto failed = store.insert(uow, order("b", "order-2", {{"payment", t0() + 1s}}));
        CHECK(failed == errc::store_error);
        CHECK(store.insert(uow, order("c", "order-3")) == failed); // the unit is failed
        CHECK(uow.commit() == failed);
    }
    std::error_code ec;
    CHECK(store.size(ec) == 0); // a, b and the DROP were rolled back
    CHECK_FALSE(ec);
    auto raw = open_raw(path);
    CHECK(int_of(raw, "SELECT count(*) FROM sqlite_master WHERE name = 'letterbox_saga_timeout'") ==
          1);
    // The database is usable again.
    auto uow = db.begin();
    REQUIRE_FALSE(store.insert(uow, order("b", "order-2", {{"payment", t0() + 1s}})));
    REQUIRE_FALSE(uow.commit());
    CHECK(stored(store, "b").timeouts.size() == 1);
}

} // namespace unit_sqlite_saga_store
