// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/connection.hpp>

#include <span>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// The tables letterbox keeps in an SQLite database, and the forward migrations that create
/// and evolve them.
///
/// The installed version is a row of `letterbox_schema_version(component TEXT PRIMARY KEY,
/// version INTEGER)`, under the component name `schema::component`; other components can keep
/// their own rows in the same table. Version 1 creates the outbox and the inbox:
///
///     letterbox_outbox   one row per event: sequence INTEGER PRIMARY KEY AUTOINCREMENT (commit
///                        order), message_id TEXT UNIQUE, aggregate_type, aggregate_id,
///                        event_type, exchange, routing_key (TEXT), headers, properties,
///                        payload (BLOB), created_at, status (0 pending, 1 published,
///                        2 parked), attempts, next_attempt_at, last_error, last_failure_at,
///                        lease_owner ('' when not leased), lease_expires_at, published_at,
///                        aggregate_head (1: unpublished and first of its aggregate; kept
///                        by triggers), and the indexes claim, list, stats and purge use
///     letterbox_inbox    (consumer_id, message_id) PRIMARY KEY, recorded_at
///
/// Version 2 moves the outbox's delivery state out of the event rows, into narrow tables
/// (`letterbox_outbox_unpublished`, `_lane`, `_published`). Version 3 stores the inbox's
/// `message_id` as the id's 16 bytes (a BLOB) instead of its 36 characters of text. Version 4
/// adds the saga instances of `saga_store`:
///
///     letterbox_saga          (saga_type, id) PRIMARY KEY, correlation (UNIQUE within its
///                             saga_type), state, version, data (JSON text), finished (0 or 1),
///                             updated_at
///     letterbox_saga_timeout  (saga_type, id, name) PRIMARY KEY, due_at (indexed); deleting
///                             an instance deletes its timeouts (a trigger)
///
/// Version 5 adds the event streams of `event_store`, the snapshots of `snapshot_store` and
/// the projection checkpoints of `checkpoint_store`:
///
///     letterbox_event         position INTEGER PRIMARY KEY (the rowid: commit order, without
///                             gaps), stream, version (UNIQUE within its stream), id (the
///                             event id's 16 bytes, a BLOB), type, data, metadata (JSON text),
///                             recorded_at
///     letterbox_snapshot      (stream, version) PRIMARY KEY, recorded_at, fold_version, state
///                             (JSON text)
///     letterbox_checkpoint    name PRIMARY KEY, position (0: from the start)
///
/// Times are INTEGER microseconds since the Unix epoch (UTC). `headers` and `properties` are
/// a compact, lossless, versioned binary encoding (every AMQP field type, nested tables, exact
/// integer widths, raw bytes).
///
/// `migrate` runs the missing steps in one `BEGIN IMMEDIATE` transaction, so two processes
/// opening a new file at once cannot both apply a step, and a failed step leaves the previous
/// version intact. A database whose version is newer than `latest_version()` is refused with
/// `errc::store_schema_too_new` and left untouched. A later version of letterbox appends a
/// step to `migrations()`; steps are never edited once released.
///
/// Thread safety: the functions are stateless; the connection is used by one thread at a time.
///
/// Example (`database::open` does this for you):
///
///     std::error_code ec;
///     const int before = letterbox::sqlite::schema::installed_version(conn, ec);
///     if (auto failed = letterbox::sqlite::schema::migrate(conn))
///         return failed; // errc::store_schema_too_new: written by a newer letterbox
class schema {
public:
    /// One forward step: the SQL that takes the schema from `version - 1` to `version`.
    struct migration {
        int version;
        std::string_view description;
        std::string_view sql;
    };

    /// The name of letterbox's row in `letterbox_schema_version`.
    static constexpr std::string_view component = "letterbox.sqlite";

    /// Every step, in version order, starting at 1.
    static std::span<const migration> migrations() noexcept;

    /// The version this library writes: the last step's.
    static int latest_version() noexcept { return migrations().back().version; }

    /// The version recorded in the database; 0 for a database letterbox never touched.
    static int installed_version(connection& conn, std::error_code& ec);

    /// Brings the schema to `latest_version()`. Does nothing (and takes no write lock) when it
    /// is already there. Returns `errc::store_schema_too_new` for a newer database,
    /// `errc::store_busy` when another writer holds the lock past the busy timeout (the
    /// caller may retry), or the error of a failed step (rolled back).
    [[nodiscard]] static std::error_code migrate(connection& conn);
};

} // namespace letterbox::sqlite

#if LETTERBOX_HEADER_ONLY
#include <letterbox/sqlite/impl/schema.hpp>
#endif
