// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/postgres/connection.hpp>
#include <letterbox/postgres/database_options.hpp>
#include <letterbox/postgres/detail/database_state.hpp>
#include <letterbox/postgres/schema.hpp>
#include <letterbox/postgres/unit_of_work.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// A PostgreSQL database used by letterbox: the object users create, from which units of work
/// begin and on which `outbox_store` and `inbox_store` are built.
///
/// `open` connects once (so a wrong password, an unreachable server or a missing database is
/// reported at open, never later), checks the schema name, and brings letterbox's tables in
/// that schema to the version this library writes (see `schema`). A schema written by a newer
/// letterbox is refused with `errc::store_schema_too_new`. Several processes may open the same
/// database and schema at once: that is how several relays share one outbox.
///
/// The database owns a pool of connections (`database_options::max_connections`): each unit of
/// work holds one for its lifetime, each store operation borrows one, and the pool opens more
/// on demand up to the limit. The database, its stores and its open units share the pool: the
/// last of them closes it.
///
/// Secrets: the connection string is kept for new connections only. No error, message or log of
/// this component shows the password.
///
/// Thread safety: every member function may be called concurrently.
///
/// Example:
///
///     std::error_code ec;
///     auto db = letterbox::postgres::database::open("postgresql://app@db.internal/orders", {},
///     ec); if (ec) {
///         std::cerr << ec.message() << ": " << db.last_error_message() << '\n';
///         return 1;
///     }
///     letterbox::postgres::outbox_store outbox(db);
///     auto uow = db.begin();
class database {
public:
    /// Connects with the libpq connection string or URI `conninfo`, checks it and migrates the
    /// schema. On failure sets `ec` and returns a database that is not open, whose
    /// `last_error_message()` says why (without the password).
    static database open(std::string_view conninfo, const database_options& options,
                         std::error_code& ec);
    /// Like the other `open`, but throws `letterbox::error` with the reason on failure.
    static database open(std::string_view conninfo, const database_options& options = {});

    database(database&&) noexcept = default;
    database& operator=(database&&) noexcept = default;
    database(const database&) = delete;
    database& operator=(const database&) = delete;
    ~database() = default;

    /// Whether `open` succeeded (and this object was not moved from).
    bool is_open() const noexcept { return state_ != nullptr; }

    /// Begins a unit of work: lends a connection of the pool and runs `BEGIN` (with the
    /// options' isolation level). On failure (`errc::store_busy` when no connection came free
    /// in time, `errc::store_connection_lost`, ...) sets `ec` and returns a finished unit.
    unit_of_work begin(std::error_code& ec);
    /// Like the other `begin`, but throws `letterbox::error` on failure.
    unit_of_work begin();

    const database_options& options() const noexcept;

    /// The server's text of the most recent failure of any operation on this database
    /// (concurrent failures: one of them), without the password.
    std::string last_error_message() const;

    /// Connections open now (idle and lent), and idle ones.
    std::size_t open_connections() const;
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
    std::string open_error_; // why open failed
};

} // namespace letterbox::postgres

#if LETTERBOX_HEADER_ONLY
#include <letterbox/postgres/impl/database.hpp>
#endif
