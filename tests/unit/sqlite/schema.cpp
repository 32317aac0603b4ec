// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/schema.hpp>

#include <letterbox/sqlite/database.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <string>
#include <system_error>
#include <thread>

namespace unit_sqlite_schema {

namespace {

using letterbox::errc;
using letterbox::sqlite::connection;
using letterbox::sqlite::database;
using letterbox::sqlite::database_options;
using letterbox::sqlite::schema;
using letterbox_sqlite_test::int_of;
using letterbox_sqlite_test::temp_directory;

connection open_raw(const std::string& path) {
    std::error_code ec;
    auto c = connection::open(path, database_options{}, ec);
    REQUIRE_FALSE(ec);
    return c;
}

} // namespace

TEST_CASE("schema lists its migrations from version 1 without gaps", "[sqlite][schema]") {
    const auto steps = schema::migrations();
    REQUIRE_FALSE(steps.empty());
    for (std::size_t i = 0; i < steps.size(); ++i) {
        CHECK(steps[i].version == static_cast<int>(i) + 1);
        CHECK_FALSE(steps[i].description.empty());
        CHECK_FALSE(steps[i].sql.empty());
    }
    CHECK(schema::latest_version() == steps.back().version);
}

TEST_CASE("schema records its version and creates the tables", "[sqlite][schema]") {
    temp_directory dir;
    auto c = open_raw(dir.file("a.db"));
    std::error_code ec;
    CHECK(schema::installed_version(c, ec) == 0);
    CHECK_FALSE(ec);
    REQUIRE_FALSE(schema::migrate(c));
    CHECK(schema::installed_version(c, ec) == schema::latest_version());
    CHECK(int_of(c, "SELECT count(*) FROM letterbox_schema_version WHERE component = "
                    "'letterbox.sqlite'") == 1);
    CHECK(int_of(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                    "('letterbox_outbox', 'letterbox_inbox')") == 2);
    CHECK_FALSE(c.in_transaction());
}

TEST_CASE("schema migrations are idempotent across opens", "[sqlite][schema]") {
    temp_directory dir;
    auto first = open_raw(dir.file("a.db"));
    auto second = open_raw(dir.file("a.db"));
    REQUIRE_FALSE(schema::migrate(first));
    REQUIRE_FALSE(first.exec("INSERT INTO letterbox_inbox VALUES ('c', 'm', 0)"));
    // Already at the latest version: nothing runs again, nothing is lost.
    REQUIRE_FALSE(schema::migrate(second));
    REQUIRE_FALSE(schema::migrate(first));
    CHECK(int_of(second, "SELECT count(*) FROM letterbox_inbox") == 1);
    CHECK(int_of(second, "SELECT count(*) FROM letterbox_schema_version") == 1);

    // And through database::open, twice at once.
    std::error_code ec;
    auto a = database::open(dir.file("a.db"), database_options{}, ec);
    REQUIRE_FALSE(ec);
    auto b = database::open(dir.file("a.db"), database_options{}, ec);
    REQUIRE_FALSE(ec);
    CHECK(int_of(second, "SELECT count(*) FROM letterbox_inbox") == 1);
}

TEST_CASE("schema migrates a new file opened by two threads at once exactly once",
          "[sqlite][schema][threads]") {
    // The race (a lock upgrade SQLite refuses without waiting) shows about once in 150 rounds.
    for (int round = 0; round < 60; ++round) {
        INFO("round " << round);
        temp_directory dir;
        std::error_code ec_a, ec_b;
        std::thread a([&] { (void)database::open(dir.file("new.db"), database_options{}, ec_a); });
        std::thread b([&] { (void)database::open(dir.file("new.db"), database_options{}, ec_b); });
        a.join();
        b.join();
        CHECK_FALSE(ec_a);
        CHECK_FALSE(ec_b);
        auto c = open_raw(dir.file("new.db"));
        std::error_code ec;
        CHECK(schema::installed_version(c, ec) == schema::latest_version());
    }
}

TEST_CASE("schema refuses a database written by a newer letterbox and leaves it untouched",
          "[sqlite][schema]") {
    temp_directory dir;
    const auto newer = schema::latest_version() + 1;
    {
        auto c = open_raw(dir.file("a.db"));
        REQUIRE_FALSE(schema::migrate(c));
        REQUIRE_FALSE(
            c.exec("UPDATE letterbox_schema_version SET version = " + std::to_string(newer)));
        CHECK(schema::migrate(c) == errc::store_schema_too_new);
    }
    std::error_code ec;
    auto db = database::open(dir.file("a.db"), database_options{}, ec);
    CHECK(ec == errc::store_schema_too_new);
    CHECK_FALSE(db.is_open());
    CHECK(db.last_error_message().find(std::to_string(newer)) != std::string::npos);
    CHECK_THROWS_AS(database::open(dir.file("a.db")), letterbox::error);

    auto c = open_raw(dir.file("a.db"));
    CHECK(schema::installed_version(c, ec) == newer);
}

TEST_CASE("schema keeps other components' rows in the version table", "[sqlite][schema]") {
    temp_directory dir;
    auto c = open_raw(dir.file("a.db"));
    REQUIRE_FALSE(c.exec("CREATE TABLE letterbox_schema_version (component TEXT PRIMARY KEY, "
                         "version INTEGER NOT NULL); INSERT INTO letterbox_schema_version "
                         "VALUES ('someone.else', 99)"));
    std::error_code ec;
    CHECK(schema::installed_version(c, ec) == 0);
    REQUIRE_FALSE(schema::migrate(c));
    CHECK(schema::installed_version(c, ec) == schema::latest_version());
    CHECK(int_of(c, "SELECT version FROM letterbox_schema_version WHERE component = "
                    "'someone.else'") == 99);
}

} // namespace unit_sqlite_schema
