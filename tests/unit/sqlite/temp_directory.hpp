// SPDX-License-Identifier: BSL-1.0
// Test helpers of the SQLite unit tests: a temporary directory per test, a fixed instant, and
// a one-number query.
#pragma once

#include <letterbox/sqlite/connection.hpp>
#include <letterbox/store_time.hpp>

#include "support/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <chrono>
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

} // namespace letterbox_sqlite_test
