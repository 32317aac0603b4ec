// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/detail/error_record.hpp>
#include <letterbox/sqlite/to_error_code.hpp>

#include <sqlite3.h>

#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

class connection;

/// A prepared SQLite statement: RAII over `sqlite3_stmt*` (finalized on destruction),
/// move-only, with typed bind, step and column helpers that report `std::error_code`s.
///
/// Parameters are numbered from 1 and columns from 0, as in SQLite. Text and blobs are bound
/// with `SQLITE_TRANSIENT` (SQLite copies them), so the arguments need not outlive the call.
/// The `std::string_view`s returned by `column_text` and `column_blob` point into SQLite's
/// row buffer: they are valid until the next `step`, `reset` or destruction.
///
/// A statement that returned a row and was not stepped to the end keeps its read transaction
/// open; call `reset()` when done with it. Statements borrowed from `connection::prepare` are
/// reset when the borrow ends.
///
/// Thread safety: a statement belongs to its connection, which one thread uses at a time.
///
/// Example:
///
///     std::error_code ec;
///     auto st = conn.prepare("SELECT name FROM customer WHERE id = ?1", ec);
///     st->bind_int64(1, 42);
///     while (st->step(ec))
///         names.emplace_back(st->column_text(0));
///     if (ec) return ec;
class statement {
public:
    /// An empty statement (`valid()` is false).
    statement() noexcept = default;

    /// Compiles the first statement of `sql` on `db`. On failure returns an empty statement
    /// and sets `ec` (the driver's text is `sqlite3_errmsg(db)`).
    static statement prepare(sqlite3* db, std::string_view sql, std::error_code& ec) {
        ec.clear();
        statement s;
        if (sql.size() > static_cast<std::size_t>(INT_MAX)) {
            ec = errc::store_error;
            return s;
        }
        const int rc =
            sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s.stmt_, nullptr);
        if (rc != SQLITE_OK) {
            ec = to_error_code(rc);
            sqlite3_finalize(s.stmt_);
            s.stmt_ = nullptr;
        } else if (s.stmt_ == nullptr) {
            ec = errc::store_error; // `sql` held no statement (only whitespace or comments)
        }
        return s;
    }

    statement(statement&& other) noexcept
        : stmt_(std::exchange(other.stmt_, nullptr))
        , errors_(std::exchange(other.errors_, nullptr)) {}
    statement& operator=(statement&& other) noexcept {
        if (this != &other) {
            sqlite3_finalize(stmt_);
            stmt_ = std::exchange(other.stmt_, nullptr);
            errors_ = std::exchange(other.errors_, nullptr);
        }
        return *this;
    }
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    ~statement() { sqlite3_finalize(stmt_); }

    /// Whether this holds a compiled statement.
    bool valid() const noexcept { return stmt_ != nullptr; }
    sqlite3_stmt* native_handle() const noexcept { return stmt_; }
    /// The SQL text the statement was compiled from.
    std::string_view sql() const noexcept {
        const char* text = stmt_ ? sqlite3_sql(stmt_) : nullptr;
        return text ? std::string_view(text) : std::string_view();
    }

    std::error_code bind_int64(int index, std::int64_t value) noexcept {
        return checked(sqlite3_bind_int64(stmt_, index, value));
    }
    std::error_code bind_double(int index, double value) noexcept {
        return checked(sqlite3_bind_double(stmt_, index, value));
    }
    /// Binds `value` as TEXT. Its bytes are stored as given (they may hold NULs).
    std::error_code bind_text(int index, std::string_view value) noexcept {
        if (value.size() > static_cast<std::size_t>(INT_MAX))
            return errc::store_error;
        return checked(sqlite3_bind_text(stmt_, index, value.empty() ? "" : value.data(),
                                         static_cast<int>(value.size()), SQLITE_TRANSIENT));
    }
    /// Binds `bytes` as a BLOB (never NULL, even when empty).
    std::error_code bind_blob(int index, std::string_view bytes) noexcept {
        if (bytes.size() > static_cast<std::size_t>(INT_MAX))
            return errc::store_error;
        if (bytes.empty())
            return checked(sqlite3_bind_zeroblob(stmt_, index, 0));
        return checked(sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()),
                                         SQLITE_TRANSIENT));
    }
    std::error_code bind_null(int index) noexcept {
        return checked(sqlite3_bind_null(stmt_, index));
    }

    /// Runs the statement to its next row. Returns true when a row is ready (read it with the
    /// `column_*` functions); false when the statement is done (`ec` cleared) or failed (`ec`
    /// set, see `to_error_code`).
    bool step(std::error_code& ec) noexcept {
        const int rc = sqlite3_step(stmt_);
        if (rc == SQLITE_ROW) {
            ec.clear();
            return true;
        }
        if (rc == SQLITE_DONE) {
            ec.clear();
            return false;
        }
        ec = failed(rc);
        return false;
    }

    /// Steps the statement to its end, discarding any rows; for statements that write.
    [[nodiscard]] std::error_code execute() noexcept {
        std::error_code ec;
        while (step(ec)) {
        }
        return ec;
    }

    /// Makes the statement ready to run again and clears its bindings; ends its read
    /// transaction if it was not stepped to the end.
    void reset() noexcept {
        if (stmt_) {
            sqlite3_reset(stmt_);
            sqlite3_clear_bindings(stmt_);
        }
    }

    int column_count() const noexcept { return sqlite3_column_count(stmt_); }
    bool column_is_null(int column) const noexcept {
        return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
    }
    std::int64_t column_int64(int column) const noexcept {
        return sqlite3_column_int64(stmt_, column);
    }
    double column_double(int column) const noexcept { return sqlite3_column_double(stmt_, column); }
    /// The column as text (empty for NULL); valid until the next step or reset.
    std::string_view column_text(int column) const noexcept {
        return column_view(sqlite3_column_text(stmt_, column), column);
    }
    /// The column as bytes (empty for NULL); valid until the next step or reset.
    std::string_view column_blob(int column) const noexcept {
        return column_view(sqlite3_column_blob(stmt_, column), column);
    }

private:
    // `data`, the column's value as sqlite3_column_text or _blob returned it, with the column's
    // size, which SQLite gives only after that call (it may convert the value first).
    std::string_view column_view(const void* data, int column) const noexcept {
        const int size = sqlite3_column_bytes(stmt_, column);
        return data ? std::string_view(static_cast<const char*>(data),
                                       static_cast<std::size_t>(size))
                    : std::string_view();
    }

    friend class connection;

    std::error_code checked(int rc) noexcept {
        return rc == SQLITE_OK ? std::error_code{} : failed(rc);
    }

    // Keeps the driver's code and text where the owning connection reports them, before a
    // later call (a ROLLBACK, say) replaces them.
    std::error_code failed(int rc) noexcept {
        if (errors_)
            errors_->capture(sqlite3_db_handle(stmt_), rc);
        return to_error_code(rc);
    }

    sqlite3_stmt* stmt_ = nullptr;
    detail::error_record* errors_ = nullptr; // the owning connection's last failure, if any
};

} // namespace letterbox::sqlite
