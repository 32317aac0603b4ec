// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <sqlite3.h>

#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// Maps an SQLite result code (primary or extended) to letterbox's error vocabulary.
///
/// | SQLite | `letterbox::errc` |
/// | --- | --- |
/// | `SQLITE_OK`, `SQLITE_ROW`, `SQLITE_DONE` | success (an empty code) |
/// | `SQLITE_NOTADB` | `store_not_a_database` |
/// | `SQLITE_CORRUPT` | `store_corrupt` |
/// | `SQLITE_CANTOPEN`, `SQLITE_PERM`, `SQLITE_AUTH` | `store_unavailable` |
/// | `SQLITE_FULL` | `store_full` |
/// | `SQLITE_IOERR` | `store_io_error` |
/// | `SQLITE_READONLY` | `store_readonly` |
/// | `SQLITE_BUSY`, `SQLITE_LOCKED` | `store_busy` |
/// | anything else (`SQLITE_ERROR`, `SQLITE_CONSTRAINT`, `SQLITE_NOMEM`, ...) | `store_error` |
///
/// An error code cannot carry the driver's text; `connection::last_error_message()` and
/// `database::last_error_message()` keep it. Stores map `SQLITE_CONSTRAINT` on their own keys
/// to `errc::duplicate_message_id` or `errc::already_processed` themselves.
///
/// Example:
///
///     if (auto ec = letterbox::sqlite::to_error_code(sqlite3_exec(db, sql, 0, 0, 0)))
///         return ec;
inline std::error_code to_error_code(int result_code) noexcept {
    switch (result_code & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return {};
    case SQLITE_NOTADB:
        return errc::store_not_a_database;
    case SQLITE_CORRUPT:
        return errc::store_corrupt;
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return errc::store_unavailable;
    case SQLITE_FULL:
        return errc::store_full;
    case SQLITE_IOERR:
        return errc::store_io_error;
    case SQLITE_READONLY:
        return errc::store_readonly;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return errc::store_busy;
    default:
        return errc::store_error;
    }
}

} // namespace letterbox::sqlite
