// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// How a `postgres::database` connects, where its tables live, and how its units of work run.
/// Every field has a default suited to a service that shares a server with others.
///
/// Example:
///
///     letterbox::postgres::database_options options;
///     options.schema = "orders_messaging";
///     options.max_connections = 16;
///     auto db = letterbox::postgres::database::open(std::getenv("DATABASE_URL"), options);
struct database_options {
    /// Transaction isolation of the units of work (`BEGIN ISOLATION LEVEL ...`). The stores
    /// are correct under each; `serializable` makes the server abort a unit whose reads a
    /// concurrent one changed (`errc::store_serialization_failure`: run the unit again).
    enum class isolation_level { read_committed, repeatable_read, serializable };

    /// The schema that holds letterbox's tables (`letterbox_outbox`, `letterbox_inbox`,
    /// `letterbox_schema_version`). Lower-case letters, digits and `_`, starting with a letter
    /// or `_`, at most 63 characters; anything else is refused at open
    /// (`errc::invalid_argument`), so the name never needs quoting rules of its own. Two
    /// services, or two tests, on one database keep apart by using two schemas.
    std::string schema = "letterbox";
    /// Connections the pool keeps open, at most. A unit of work holds one until it ends; a
    /// store operation borrows one for its statement.
    std::size_t max_connections = 8;
    /// How long `begin()` or a store operation waits for a connection when all
    /// `max_connections` are lent, before it fails with `errc::store_busy`.
    std::chrono::milliseconds acquire_timeout{10000};
    /// libpq's `connect_timeout`, unless the connection string sets one.
    std::chrono::seconds connect_timeout{10};
    /// libpq's `application_name` (what `pg_stat_activity` shows), unless the connection string
    /// sets one.
    std::string application_name = "letterbox";
    isolation_level isolation = isolation_level::read_committed;
    /// `lock_timeout` of every connection: a statement that waits longer for a lock that another
    /// unit of work holds (a row, a key, an aggregate's order lock) fails with
    /// `errc::store_busy`, and its unit with it. Unset: the server's setting (by default, wait
    /// as long as it takes).
    std::optional<std::chrono::milliseconds> lock_timeout{};
    /// `statement_timeout` of every connection: a statement that runs longer fails with
    /// `errc::store_busy`. Unset: the server's setting.
    std::optional<std::chrono::milliseconds> statement_timeout{};
    /// Create the schema and letterbox's tables when they are missing. With `false`, a database
    /// without them is refused with `errc::store_not_a_database` and left as it was; an older
    /// letterbox schema is still migrated. For tools that must act on an existing one only.
    bool create_schema_if_missing = true;
};

} // namespace letterbox::postgres
