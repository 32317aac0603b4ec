// SPDX-License-Identifier: BSL-1.0
//
// What the SQLite benchmarks' baselines share: raw calls that stop the benchmark with the
// driver's message when they fail (a baseline that fails silently measures nothing).
#pragma once

#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>

namespace bench {

/// Runs `sql` on `db`; exits with SQLite's message on failure.
inline void exec_or_die(sqlite3* db, const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
        std::fprintf(stderr, "sqlite: %s: %s\n", sql, error ? error : "?");
        std::exit(1);
    }
}

/// Prepares `sql` on `db` for many runs; exits with SQLite's message on failure.
inline sqlite3_stmt* prepare_or_die(sqlite3* db, const char* sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr) != SQLITE_OK) {
        std::fprintf(stderr, "sqlite: %s: %s\n", sql, sqlite3_errmsg(db));
        std::exit(1);
    }
    return st;
}

} // namespace bench
