// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/to_error_code.hpp>

#include <catch2/catch.hpp>

#include <sqlite3.h>

namespace unit_sqlite_to_error_code {

using letterbox::errc;
using letterbox::sqlite::to_error_code;

TEST_CASE("to_error_code maps SQLite's result codes to typed store errors", "[sqlite]") {
    CHECK_FALSE(to_error_code(SQLITE_OK));
    CHECK_FALSE(to_error_code(SQLITE_ROW));
    CHECK_FALSE(to_error_code(SQLITE_DONE));
    CHECK(to_error_code(SQLITE_NOTADB) == errc::store_not_a_database);
    CHECK(to_error_code(SQLITE_CORRUPT) == errc::store_corrupt);
    CHECK(to_error_code(SQLITE_CANTOPEN) == errc::store_unavailable);
    CHECK(to_error_code(SQLITE_PERM) == errc::store_unavailable);
    CHECK(to_error_code(SQLITE_FULL) == errc::store_full);
    CHECK(to_error_code(SQLITE_IOERR) == errc::store_io_error);
    CHECK(to_error_code(SQLITE_READONLY) == errc::store_readonly);
    CHECK(to_error_code(SQLITE_BUSY) == errc::store_busy);
    CHECK(to_error_code(SQLITE_LOCKED) == errc::store_busy);
    CHECK(to_error_code(SQLITE_ERROR) == errc::store_error);
    CHECK(to_error_code(SQLITE_NOMEM) == errc::store_error);
    CHECK(to_error_code(SQLITE_CONSTRAINT) == errc::store_error);
}

TEST_CASE("to_error_code maps extended result codes by their primary code", "[sqlite]") {
    CHECK(to_error_code(SQLITE_IOERR_READ) == errc::store_io_error);
    CHECK(to_error_code(SQLITE_IOERR_FSYNC) == errc::store_io_error);
    CHECK(to_error_code(SQLITE_BUSY_SNAPSHOT) == errc::store_busy);
    CHECK(to_error_code(SQLITE_CORRUPT_INDEX) == errc::store_corrupt);
    CHECK(to_error_code(SQLITE_CANTOPEN_ISDIR) == errc::store_unavailable);
    CHECK(to_error_code(SQLITE_READONLY_DBMOVED) == errc::store_readonly);
    CHECK(to_error_code(SQLITE_CONSTRAINT_UNIQUE) == errc::store_error);
}

} // namespace unit_sqlite_to_error_code
