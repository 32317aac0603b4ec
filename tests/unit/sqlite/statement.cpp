// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/statement.hpp>

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace unit_sqlite_statement {

namespace {

using letterbox::errc;
using letterbox::sqlite::statement;

/// A private in-memory database for statement tests (the connection class refuses those).
struct memory_db {
    sqlite3* db = nullptr;
    memory_db() {
        REQUIRE(sqlite3_open(":memory:", &db) == SQLITE_OK);
        sqlite3_extended_result_codes(db, 1);
    }
    memory_db(const memory_db&) = delete;
    memory_db& operator=(const memory_db&) = delete;
    ~memory_db() { sqlite3_close(db); }
};

} // namespace

TEST_CASE("statement binds and reads every column type", "[sqlite][statement]") {
    memory_db m;
    std::error_code ec;
    auto st = statement::prepare(m.db, "SELECT ?1, ?2, ?3, ?4, ?5, ?6", ec);
    REQUIRE_FALSE(ec);
    REQUIRE(st.valid());
    CHECK(st.sql() == "SELECT ?1, ?2, ?3, ?4, ?5, ?6");
    const std::string text("nul \0 and \xff", 11);
    const std::string blob("\0\1\2", 3);
    CHECK_FALSE(st.bind_int64(1, -9'000'000'000'000'000'000));
    CHECK_FALSE(st.bind_double(2, 0.5));
    CHECK_FALSE(st.bind_text(3, text));
    CHECK_FALSE(st.bind_blob(4, blob));
    CHECK_FALSE(st.bind_null(5));
    CHECK_FALSE(st.bind_blob(6, ""));

    REQUIRE(st.step(ec));
    CHECK(st.column_count() == 6);
    CHECK(st.column_int64(0) == -9'000'000'000'000'000'000);
    CHECK(st.column_double(1) == 0.5);
    CHECK(st.column_text(2) == text); // bytes kept, NUL included
    CHECK(st.column_blob(3) == blob);
    CHECK(st.column_is_null(4));
    CHECK(st.column_text(4).empty());
    CHECK_FALSE(st.column_is_null(5)); // an empty blob is not NULL
    CHECK(st.column_blob(5).empty());
    CHECK_FALSE(st.step(ec));
    CHECK_FALSE(ec);
}

TEST_CASE("statement reset clears its bindings", "[sqlite][statement]") {
    memory_db m;
    std::error_code ec;
    auto st = statement::prepare(m.db, "SELECT ?1", ec);
    REQUIRE_FALSE(ec);
    st.bind_int64(1, 7);
    REQUIRE(st.step(ec));
    CHECK(st.column_int64(0) == 7);
    st.reset();
    REQUIRE(st.step(ec));
    CHECK(st.column_is_null(0));
}

TEST_CASE("statement reports failures as typed error codes", "[sqlite][statement]") {
    memory_db m;
    std::error_code ec;
    auto bad = statement::prepare(m.db, "SELEC 1", ec);
    CHECK(ec == errc::store_error);
    CHECK_FALSE(bad.valid());
    auto empty = statement::prepare(m.db, "  -- nothing", ec);
    CHECK(ec == errc::store_error);
    CHECK_FALSE(empty.valid());

    REQUIRE(sqlite3_exec(m.db, "CREATE TABLE t (k INTEGER PRIMARY KEY)", nullptr, nullptr,
                         nullptr) == SQLITE_OK);
    auto insert = statement::prepare(m.db, "INSERT INTO t (k) VALUES (1)", ec);
    REQUIRE_FALSE(ec);
    CHECK_FALSE(insert.execute());
    insert.reset();
    CHECK(insert.execute() == errc::store_error); // SQLITE_CONSTRAINT_PRIMARYKEY
    CHECK(sqlite3_extended_errcode(m.db) == SQLITE_CONSTRAINT_PRIMARYKEY);
}

TEST_CASE("statement is move-only and finalizes once", "[sqlite][statement]") {
    static_assert(!std::is_copy_constructible_v<statement>);
    static_assert(std::is_nothrow_move_constructible_v<statement>);
    memory_db m;
    std::error_code ec;
    auto a = statement::prepare(m.db, "SELECT 1", ec);
    auto* handle = a.native_handle();
    statement b(std::move(a));
    CHECK_FALSE(a.valid()); // NOLINT(bugprone-use-after-move): moved-from is empty
    CHECK(b.native_handle() == handle);
    statement c;
    c = std::move(b);
    REQUIRE(c.step(ec));
    CHECK(c.column_int64(0) == 1);
}

} // namespace unit_sqlite_statement
