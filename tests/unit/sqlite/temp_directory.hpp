// SPDX-License-Identifier: BSL-1.0
// Test helpers of the SQLite unit tests: a temporary directory per test, a fixed instant, a
// one-number query, a raw connection, and the schema as an older release left it.
#pragma once

#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database_options.hpp>
#include <letterbox/sqlite/schema.hpp>
#include <letterbox/store_time.hpp>

#include "support/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>

namespace letterbox_sqlite_test {

using test_support::temp_directory;

/// 2024-01-01T00:00:00Z, a whole second.
inline letterbox::store_time t0() {
    return letterbox::store_time{std::chrono::sys_days{std::chrono::year{2024} / 1 / 1}};
}

/// The integer in the first column of the first row that `sql` returns on `c`.
inline std::int64_t int_of(letterbox::sqlite::connection& c, const std::string& sql) {
    std::error_code ec;
    auto st = c.prepare(sql, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(st->step(ec));
    return st->column_int64(0);
}

/// A connection of its own on `path`, to look at (or shape) the tables as they are.
inline letterbox::sqlite::connection open_raw(const std::string& path) {
    std::error_code ec;
    auto c = letterbox::sqlite::connection::open(path, letterbox::sqlite::database_options{}, ec);
    REQUIRE_FALSE(ec);
    return c;
}

/// Installs the schema as release `version` left it, in `c`'s open transaction: the steps up
/// to `version` and the version row. Step 3 calls a function that `schema::migrate` lends it;
/// a stand-in is installed, which is enough on tables without rows.
inline void install_schema(letterbox::sqlite::connection& c, int version) {
    REQUIRE(sqlite3_create_function_v2(
                c.native_handle(), "letterbox_uuid_bytes", 1, SQLITE_UTF8, nullptr,
                [](sqlite3_context* context, int, sqlite3_value** args) {
                    sqlite3_result_value(context, args[0]);
                },
                nullptr, nullptr, nullptr) == SQLITE_OK);
    const auto steps = letterbox::sqlite::schema::migrations();
    for (std::size_t step = 0; step < static_cast<std::size_t>(version); ++step)
        REQUIRE_FALSE(c.exec(steps[step].sql));
    REQUIRE_FALSE(c.exec("CREATE TABLE letterbox_schema_version (component TEXT PRIMARY KEY, "
                         "version INTEGER NOT NULL)"));
    REQUIRE_FALSE(c.exec("INSERT INTO letterbox_schema_version VALUES ('letterbox.sqlite', " +
                         std::to_string(version) + ")"));
}

} // namespace letterbox_sqlite_test
