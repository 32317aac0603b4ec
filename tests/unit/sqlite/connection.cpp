// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/connection.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <string>
#include <system_error>
#include <utility>

namespace unit_sqlite_connection {

namespace {

using letterbox::errc;
using letterbox::sqlite::connection;
using letterbox::sqlite::database_options;
using letterbox_sqlite_test::int_of;
using letterbox_sqlite_test::temp_directory;

std::string text_of(connection& c, const std::string& sql) {
    std::error_code ec;
    auto st = c.prepare(sql, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(st->step(ec));
    return std::string(st->column_text(0));
}

} // namespace

TEST_CASE("connection opens in WAL with busy_timeout, foreign_keys and synchronous set",
          "[sqlite][connection]") {
    temp_directory dir;
    database_options options;
    options.busy_timeout = std::chrono::milliseconds(1234);
    options.synchronous = database_options::synchronous_mode::full;
    options.pragmas = {"cache_size = -1234"};
    std::error_code ec;
    auto c = connection::open(dir.file("a.db"), options, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(c.is_open());
    CHECK(text_of(c, "PRAGMA journal_mode") == "wal");
    CHECK(int_of(c, "PRAGMA busy_timeout") == 1234);
    CHECK(int_of(c, "PRAGMA foreign_keys") == 1);
    CHECK(int_of(c, "PRAGMA synchronous") == 2); // FULL
    CHECK(int_of(c, "PRAGMA cache_size") == -1234);

    auto d = connection::open(dir.file("a.db"), database_options{}, ec);
    REQUIRE_FALSE(ec);
    CHECK(int_of(d, "PRAGMA synchronous") == 1); // NORMAL, the default
    CHECK(int_of(d, "PRAGMA busy_timeout") == 5000);
}

TEST_CASE("connection's statement cache reuses statements and resets them",
          "[sqlite][connection]") {
    temp_directory dir;
    std::error_code ec;
    auto c = connection::open(dir.file("a.db"), database_options{}, ec);
    REQUIRE_FALSE(ec);
    sqlite3_stmt* first = nullptr;
    {
        auto st = c.prepare("SELECT ?1", ec);
        REQUIRE_FALSE(ec);
        first = st->native_handle();
        st->bind_int64(1, 42);
        REQUIRE(st->step(ec)); // left mid-way: the borrow resets it
        CHECK(st->column_int64(0) == 42);
    }
    CHECK(c.cached_statements() == 1);
    CHECK_FALSE(c.in_transaction());
    {
        auto st = c.prepare("SELECT ?1", ec);
        REQUIRE_FALSE(ec);
        CHECK(st->native_handle() == first); // the same compiled statement
        REQUIRE(st->step(ec));
        CHECK(st->column_is_null(0)); // its bindings were cleared

        // A nested use of the same SQL gets a statement of its own.
        auto nested = c.prepare("SELECT ?1", ec);
        REQUIRE_FALSE(ec);
        CHECK(nested->native_handle() != first);
        nested->bind_int64(1, 1);
        REQUIRE(nested->step(ec));
        CHECK(nested->column_int64(0) == 1);
    }
    CHECK(c.cached_statements() == 1);
}

TEST_CASE("connection's statement cache is bounded", "[sqlite][connection]") {
    temp_directory dir;
    database_options options;
    options.statement_cache_capacity = 2;
    std::error_code ec;
    auto c = connection::open(dir.file("a.db"), options, ec);
    REQUIRE_FALSE(ec);
    for (int i = 0; i < 5; ++i) {
        auto st = c.prepare("SELECT " + std::to_string(i), ec);
        REQUIRE_FALSE(ec);
        REQUIRE(st->step(ec));
        CHECK(st->column_int64(0) == i);
    }
    CHECK(c.cached_statements() == 2);
}

TEST_CASE("connection keeps the driver's text of its last failure", "[sqlite][connection]") {
    temp_directory dir;
    std::error_code ec;
    auto c = connection::open(dir.file("a.db"), database_options{}, ec);
    REQUIRE_FALSE(ec);
    CHECK(c.last_error_message().empty());
    CHECK(c.last_result_code() == SQLITE_OK);

    CHECK(c.exec("SELEC 1") == errc::store_error);
    CHECK(c.last_error_message().find("syntax error") != std::string::npos);

    auto bad = c.prepare("SELECT * FROM no_such_table", ec);
    CHECK(ec == errc::store_error);
    CHECK_FALSE(bad);
    CHECK(c.last_error_message().find("no_such_table") != std::string::npos);

    REQUIRE_FALSE(c.exec("CREATE TABLE t (k TEXT UNIQUE); INSERT INTO t VALUES ('a')"));
    {
        auto insert = c.prepare("INSERT INTO t VALUES (?1)", ec);
        REQUIRE_FALSE(ec);
        insert->bind_text(1, "a");
        CHECK(insert->execute() == errc::store_error);
    }
    // Kept even though later calls succeed and reset sqlite3_errmsg.
    REQUIRE_FALSE(c.exec("SELECT 1"));
    CHECK(c.last_result_code() == SQLITE_CONSTRAINT_UNIQUE);
    CHECK(c.last_error_message().find("UNIQUE") != std::string::npos);

    // Moving the connection keeps its statements and their error reporting working.
    connection moved(std::move(c));
    CHECK_FALSE(c.is_open()); // NOLINT(bugprone-use-after-move)
    auto again = moved.prepare("INSERT INTO t VALUES (?1)", ec);
    REQUIRE_FALSE(ec);
    again->bind_text(1, "a");
    CHECK(again->execute() == errc::store_error);
    CHECK(moved.last_result_code() == SQLITE_CONSTRAINT_UNIQUE);
}

TEST_CASE("connection refuses in-memory databases and unreachable paths", "[sqlite][connection]") {
    temp_directory dir;
    std::error_code ec;
    std::string text;
    auto memory = connection::open(":memory:", database_options{}, ec, &text);
    CHECK(ec == errc::precondition_failed);
    CHECK_FALSE(memory.is_open());
    CHECK_FALSE(text.empty());
    CHECK_FALSE(connection::open("", database_options{}, ec).is_open());
    CHECK(ec == errc::precondition_failed);

    auto missing_dir = connection::open(dir.file("no/such/dir.db"), database_options{}, ec, &text);
    CHECK(ec == errc::store_unavailable);
    CHECK_FALSE(missing_dir.is_open());
    CHECK_FALSE(text.empty());

    database_options no_create;
    no_create.create_if_missing = false;
    CHECK_FALSE(connection::open(dir.file("absent.db"), no_create, ec).is_open());
    CHECK(ec == errc::store_unavailable);

    auto directory = connection::open(dir.path().string(), database_options{}, ec);
    CHECK(ec == errc::store_unavailable);

    database_options bad_pragma;
    bad_pragma.pragmas = {"this is not a pragma"};
    CHECK_FALSE(connection::open(dir.file("a.db"), bad_pragma, ec, &text).is_open());
    CHECK(ec == errc::store_error);
    CHECK_FALSE(text.empty());
}

TEST_CASE("connection reports whether a transaction is open", "[sqlite][connection]") {
    temp_directory dir;
    std::error_code ec;
    auto c = connection::open(dir.file("a.db"), database_options{}, ec);
    REQUIRE_FALSE(ec);
    REQUIRE_FALSE(c.exec("CREATE TABLE t (k INTEGER)"));
    CHECK_FALSE(c.in_transaction());
    REQUIRE_FALSE(c.exec("BEGIN IMMEDIATE; INSERT INTO t VALUES (1), (2)"));
    CHECK(c.in_transaction());
    CHECK(c.changes() == 2);
    CHECK(c.last_insert_rowid() == 2);
    REQUIRE_FALSE(c.exec("COMMIT"));
    CHECK_FALSE(c.in_transaction());
}

} // namespace unit_sqlite_connection
