// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/postgres/connection.hpp>

#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// The tables letterbox keeps in a PostgreSQL schema (`database_options::schema`), and the
/// forward migrations that create and evolve them.
///
/// The installed version is a row of `<schema>.letterbox_schema_version(component text PRIMARY
/// KEY, version integer)`, under the component name `schema::component`. Version 1 creates the
/// outbox and the inbox:
///
///     letterbox_outbox   one row per event: sequence bigint identity, message_id uuid UNIQUE,
///                        aggregate_type, aggregate_id, event_type, exchange, routing_key
///                        (text), headers, properties, payload (bytea), created_at, status
///                        (0 pending, 1 published, 2 parked), attempts, next_attempt_at,
///                        last_error, last_failure_at, lease_owner ('' when not leased),
///                        lease_expires_at, published_at; partial indexes for claim (pending
///                        rows by sequence), for the order of an aggregate (unpublished rows by
///                        aggregate and sequence), for the parked rows and for purge
///     letterbox_inbox    (consumer_id text, message_id uuid) PRIMARY KEY, recorded_at
///                        (indexed, for purge)
///
/// Times are bigint microseconds since the Unix epoch (UTC), as in the SQLite stores; `headers`
/// and `properties` are the same lossless binary encoding as there.
///
/// `migrate` runs in one transaction (PostgreSQL's DDL is transactional) under a transaction
/// advisory lock keyed by the schema's name, so two processes opening a new database at once
/// apply each step once, and a failed step leaves the previous version intact. A schema whose
/// version is newer than `latest_version()` is refused with `errc::store_schema_too_new` and
/// left untouched. Steps are never edited once released; a later letterbox appends one.
///
/// Thread safety: the functions are stateless; the connection is used by one thread at a time.
class schema {
public:
    /// One forward step: the SQL that takes the schema from `version - 1` to `version`, with
    /// `{schema}` standing for the quoted schema name.
    struct migration {
        int version;
        std::string_view description;
        std::string_view sql;
    };
    /// The name of letterbox's row in `letterbox_schema_version`.
    static constexpr std::string_view component = "letterbox.postgres";
    /// Every step, in version order, starting at 1.
    static std::span<const migration> migrations() noexcept;
    /// The version this library writes: the last step's.
    static int latest_version() noexcept { return migrations().back().version; }
    /// Whether `name` is a schema name letterbox accepts (see `database_options::schema`).
    static bool valid_name(std::string_view name) noexcept;
    /// The version recorded in schema `name`; 0 when the schema or its version table is missing.
    static int installed_version(connection& conn, std::string_view name, std::error_code& ec);
    /// Brings schema `name` to `latest_version()`, creating it when `create_if_missing` (else a
    /// schema without letterbox's tables is `errc::store_not_a_database`). Returns
    /// `errc::store_schema_too_new` for a newer schema, or the error of a failed step (rolled
    /// back).
    [[nodiscard]] static std::error_code migrate(connection& conn, std::string_view name,
                                                 bool create_if_missing = true);
};

} // namespace letterbox::postgres

#if LETTERBOX_HEADER_ONLY
#include <letterbox/postgres/impl/schema.hpp>
#endif
