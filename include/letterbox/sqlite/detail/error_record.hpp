// SPDX-License-Identifier: BSL-1.0
#pragma once

// The driver's last failure on one connection: its result code and text. Private.

#include <letterbox/config.hpp>

#include <sqlite3.h>

#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite::detail {

/// What an `std::error_code` cannot carry: SQLite's extended result code and message of the
/// most recent failure on a connection, captured right away (a later ROLLBACK would replace
/// `sqlite3_errmsg`).
struct error_record {
    int code = SQLITE_OK;
    std::string text;

    void capture(sqlite3* db, int rc) noexcept {
        code = rc;
        try {
            text = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        } catch (...) {
            text.clear(); // out of memory: keep the code at least
        }
    }

    void set(int rc, const char* message) noexcept {
        code = rc;
        try {
            text = message;
        } catch (...) {
            text.clear();
        }
    }
};

} // namespace letterbox::sqlite::detail
