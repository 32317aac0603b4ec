// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/sqlite/database_options.hpp>
#include <letterbox/sqlite/detail/error_record.hpp>
#include <letterbox/sqlite/statement.hpp>

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// One SQLite connection: RAII over `sqlite3*` (closed on destruction), move-only, configured
/// the way letterbox needs it, with a cache of prepared statements keyed by their SQL text.
///
/// `open` opens the file with `SQLITE_OPEN_NOMUTEX`, turns on extended result codes and then
/// **reads** it (SQLite itself opens lazily), so that a file that is not a database, or whose
/// schema page is damaged, fails here with `errc::store_not_a_database` or
/// `errc::store_corrupt` instead of on the first write. Then it sets `journal_mode=WAL`,
/// `busy_timeout`, `foreign_keys=ON`, `synchronous` and the extra `pragmas` of the options.
/// With `database_options::read_only` it opens the file with `SQLITE_OPEN_READONLY` instead
/// and leaves its journal mode alone, so that nothing in the file changes.
/// It refuses in-memory databases (`""`, `":memory:"`) with `errc::precondition_failed`: every
/// connection of a pool would see a different one.
///
/// An error code cannot carry the driver's text, so the connection keeps the extended result
/// code and message of its most recent failure (`last_result_code()`,
/// `last_error_message()`), including failures of statements borrowed from `prepare`.
///
/// Most users get a connection from `unit_of_work::connection()`, to run their business writes
/// in the unit's transaction. The connection stays owned by the unit (and its database's pool):
/// do not keep it, or statements borrowed from it, beyond the unit.
///
/// Thread safety: one thread at a time (the connection is opened without SQLite's mutex).
///
/// Example:
///
///     auto uow = db.begin();
///     auto& conn = uow.connection();
///     std::error_code ec;
///     auto st = conn.prepare("INSERT INTO orders(id, total) VALUES (?1, ?2)", ec);
///     st->bind_int64(1, order_id);
///     st->bind_int64(2, total_cents);
///     if (auto failed = st->execute()) return failed; // the unit rolls back when destroyed
class connection {
public:
    class prepared;

    /// A closed connection (`is_open()` is false).
    connection() noexcept = default;

    /// Opens and configures a connection to the database file at `path` (UTF-8). On failure
    /// returns a closed connection and sets `ec`; `open_error_message` (if given) receives the
    /// driver's text.
    static connection open(const std::string& path, const database_options& options,
                           std::error_code& ec, std::string* open_error_message = nullptr);

    connection(connection&&) noexcept = default;
    connection& operator=(connection&&) noexcept = default;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    /// Finalizes the cached statements and closes the connection (an open transaction is
    /// rolled back by SQLite).
    ~connection() = default;

    bool is_open() const noexcept { return state_ && state_->db; }
    sqlite3* native_handle() const noexcept { return state_ ? state_->db : nullptr; }

    /// Runs one or more `;`-separated statements without parameters, discarding any rows.
    [[nodiscard]] std::error_code exec(std::string_view sql);

    /// Borrows the cached prepared statement for `sql`, compiling it on first use. The borrow
    /// resets the statement and clears its bindings when it ends, so its read transaction never
    /// outlives it. If that statement is already borrowed (a nested use of the same SQL) or
    /// the cache is full, the borrow owns a fresh statement instead. On failure the borrow is
    /// empty and `ec` is set.
    prepared prepare(std::string_view sql, std::error_code& ec);

    /// Whether a transaction is open on this connection (`!sqlite3_get_autocommit`).
    bool in_transaction() const noexcept;
    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    std::int64_t changes() const noexcept;
    std::int64_t last_insert_rowid() const noexcept;

    /// SQLite's text for the most recent failure on this connection; empty if none.
    const std::string& last_error_message() const noexcept;
    /// SQLite's extended result code for the most recent failure; `SQLITE_OK` if none.
    int last_result_code() const noexcept;

    /// How many statements the cache holds.
    std::size_t cached_statements() const noexcept;

private:
    struct string_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    struct cache_entry {
        statement stmt;
        bool borrowed = false;
    };
    struct state {
        sqlite3* db = nullptr;
        detail::error_record last_error;
        std::size_t cache_capacity = 0;
        std::unordered_map<std::string, std::unique_ptr<cache_entry>, string_hash, std::equal_to<>>
            cache;

        state() = default;
        state(const state&) = delete;
        state& operator=(const state&) = delete;
        ~state() {
            cache.clear(); // finalize every statement before closing
            sqlite3_close_v2(db);
        }
    };

    [[nodiscard]] std::error_code run_setup(std::string_view sql);
    /// Runs a pragma that returns its new value (journal_mode) and returns that value.
    std::string query_text(std::string_view sql, std::error_code& ec);

    std::unique_ptr<state> state_; // on the heap: borrowed statements point into it
};

/// A statement borrowed from a connection's cache (or owned, when it could not be cached),
/// reset and unbound when the borrow ends. Use it like a pointer to `statement`. Move-only;
/// must not outlive its connection.
class connection::prepared {
public:
    prepared() noexcept = default;
    prepared(prepared&& other) noexcept
        : stmt_(std::exchange(other.stmt_, nullptr))
        , borrowed_(std::exchange(other.borrowed_, nullptr))
        , owned_(std::move(other.owned_)) {
        if (stmt_ == &other.owned_)
            stmt_ = &owned_;
    }
    prepared& operator=(prepared&& other) noexcept {
        if (this != &other) {
            release();
            stmt_ = std::exchange(other.stmt_, nullptr);
            borrowed_ = std::exchange(other.borrowed_, nullptr);
            owned_ = std::move(other.owned_);
            if (stmt_ == &other.owned_)
                stmt_ = &owned_;
        }
        return *this;
    }
    prepared(const prepared&) = delete;
    prepared& operator=(const prepared&) = delete;
    ~prepared() { release(); }

    explicit operator bool() const noexcept { return stmt_ != nullptr; }
    statement* operator->() const noexcept { return stmt_; }
    statement& operator*() const noexcept { return *stmt_; }

private:
    friend class connection;

    void release() noexcept {
        if (stmt_)
            stmt_->reset();
        if (borrowed_)
            *borrowed_ = false;
        stmt_ = nullptr;
        borrowed_ = nullptr;
    }

    statement* stmt_ = nullptr;
    bool* borrowed_ = nullptr; // the cache entry's flag, when borrowed from the cache
    statement owned_;          // used when the statement could not be borrowed from the cache
};

} // namespace letterbox::sqlite

#if LETTERBOX_HEADER_ONLY
#include <letterbox/sqlite/impl/connection.hpp>
#endif
