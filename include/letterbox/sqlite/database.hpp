// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database_options.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/schema.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// An SQLite database file used by letterbox: the object users create, from which units of
/// work begin and on which `outbox_store` and `inbox_store` are built.
///
/// `open` opens a first connection, checks that the file is a healthy SQLite database
/// (`errc::store_not_a_database`, `errc::store_corrupt`, `errc::store_unavailable`, ... at open,
/// never later), and brings the schema to the version this library writes (see `schema`); a
/// database written by a newer letterbox is refused with `errc::store_schema_too_new`. With
/// `database_options::read_only` it changes nothing in the file and migrates nothing (a file
/// without letterbox's schema is `errc::store_not_a_database`); with
/// `create_schema_if_missing = false` it migrates a letterbox database but refuses, untouched,
/// a file that has no letterbox schema. Opening
/// the same file from several processes or several `database` objects is safe, at the same
/// moment too: a lock another opener holds is waited for and retried like any busy operation
/// (`busy_timeout`, `max_busy_retries`).
///
/// The database owns a pool of connections to its file, all configured alike: each unit of
/// work holds one for its lifetime, each store operation borrows one, and the pool opens more
/// on demand, so units and store operations can run from several threads. The database, its
/// stores and its open units share the pool: the last of them closes it.
///
/// Limits, plainly: SQLite has **one writer at a time**. A unit holds the write lock from
/// `begin()` to its end and other writers wait (`busy_timeout`, then `max_busy_retries`
/// retries with backoff, then `errc::store_busy`, with nothing written). WAL needs a local
/// filesystem: do not put the file on NFS or SMB. For several machines, use a server database.
///
/// Thread safety: every member function may be called concurrently.
///
/// Example:
///
///     letterbox::sqlite::database_options options;
///     options.busy_timeout = std::chrono::seconds(2);
///     std::error_code ec;
///     auto db = letterbox::sqlite::database::open("orders.db", options, ec);
///     if (ec) {
///         std::cerr << ec.message() << ": " << db.last_error_message() << '\n';
///         return 1;
///     }
///     letterbox::sqlite::outbox_store outbox(db);
///     auto uow = db.begin();
class database {
public:
    /// Opens (creating it if allowed) the database file at `path` (UTF-8), validates it and
    /// migrates its schema (see `database_options::read_only` and `create_schema_if_missing`
    /// for opens that must not). On failure sets `ec` and returns a database that is not open,
    /// whose `last_error_message()` holds the driver's text.
    static database open(const std::string& path, const database_options& options,
                         std::error_code& ec);

    /// Like the other `open`, but throws `letterbox::error` (with the driver's text) on failure.
    static database open(const std::string& path, const database_options& options = {});

    database(database&&) noexcept = default;
    database& operator=(database&&) noexcept = default;
    database(const database&) = delete;
    database& operator=(const database&) = delete;
    ~database() = default;

    /// Whether `open` succeeded (and this object was not moved from).
    bool is_open() const noexcept { return state_ != nullptr; }

    /// Begins a unit of work: takes a connection from the pool and runs `BEGIN IMMEDIATE`,
    /// retrying after a backoff while the database stays locked. On failure (`errc::store_busy`
    /// after the retries, or the error of opening a connection) sets `ec` and returns a finished
    /// unit; nothing was written. On a database opened `read_only`: `errc::store_readonly`.
    unit_of_work begin(std::error_code& ec);

    /// Like the other `begin`, but throws `letterbox::error` on failure.
    unit_of_work begin();

    /// The path the database was opened with.
    const std::string& path() const noexcept;
    const database_options& options() const noexcept;

    /// The driver's text of the most recent database failure of any operation on this
    /// database (concurrent failures: one of them). An `std::error_code` cannot carry it.
    std::string last_error_message() const;

    /// How many times an operation was retried because the database was locked, since open.
    std::uint64_t busy_retries() const noexcept;

    /// Connections open now (idle and lent), and idle ones.
    std::size_t open_connections() const noexcept;
    std::size_t idle_connections() const;

    /// For store implementations: the state the stores share with this database.
    const std::shared_ptr<detail::database_state>& state() const noexcept { return state_; }

    /// For store implementations: a handle on the database that `state` belongs to (what a
    /// store kept from `state()`), e.g. to begin a unit of work on it.
    static database attach(std::shared_ptr<detail::database_state> state) noexcept {
        database d;
        d.state_ = std::move(state);
        return d;
    }

private:
    database() = default;

    std::shared_ptr<detail::database_state> state_;
    std::string open_error_; // the driver's text when open failed
};

} // namespace letterbox::sqlite

#if LETTERBOX_HEADER_ONLY
#include <letterbox/sqlite/impl/database.hpp>
#endif
