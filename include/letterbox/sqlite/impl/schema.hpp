// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/sqlite/schema.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/sqlite/schema.hpp>
#include <letterbox/sqlite/to_error_code.hpp>

#include <sqlite3.h>

#include <cstddef>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

LETTERBOX_DECL std::span<const schema::migration> schema::migrations() noexcept {
    // Released steps are never edited: a database that recorded version n ran exactly these.
    static constexpr migration steps[] = {
        {1, "outbox and inbox tables",
         R"sql(
CREATE TABLE letterbox_outbox (
    sequence         INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id       TEXT    NOT NULL UNIQUE,
    aggregate_type   TEXT    NOT NULL,
    aggregate_id     TEXT    NOT NULL,
    event_type       TEXT    NOT NULL,
    exchange         TEXT    NOT NULL,
    routing_key      TEXT    NOT NULL,
    headers          BLOB    NOT NULL,
    properties       BLOB    NOT NULL,
    payload          BLOB    NOT NULL,
    created_at       INTEGER NOT NULL,
    status           INTEGER NOT NULL CHECK (status IN (0, 1, 2)),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    last_error       TEXT    NOT NULL DEFAULT '',
    last_failure_at  INTEGER,
    lease_owner      TEXT    NOT NULL DEFAULT '',
    lease_expires_at INTEGER NOT NULL DEFAULT 0,
    published_at     INTEGER,
    -- 1 when the row is unpublished and no earlier row of its aggregate is (or it has no
    -- aggregate): the only rows claim may hand out. Set on insert, and kept by the triggers
    -- below when the head is published or deleted.
    aggregate_head   INTEGER NOT NULL DEFAULT 0
);
-- claim: the pending heads of their aggregates, in sequence (rowid) order. Rows queued behind
-- an unpublished row of their aggregate are not in it, so a deep backlog costs claim nothing.
CREATE INDEX letterbox_outbox_claimable
    ON letterbox_outbox (sequence) WHERE status = 0 AND aggregate_head = 1;
-- list and stats: the rows of one status, in sequence order.
CREATE INDEX letterbox_outbox_status ON letterbox_outbox (status);
-- add and the triggers: the earliest unpublished row of an aggregate is one probe.
CREATE INDEX letterbox_outbox_unpublished_by_aggregate
    ON letterbox_outbox (aggregate_type, aggregate_id, sequence) WHERE status <> 1;
-- stats: the oldest pending row (the relay's lag).
CREATE INDEX letterbox_outbox_pending_created_at
    ON letterbox_outbox (created_at) WHERE status = 0;
-- purge_published.
CREATE INDEX letterbox_outbox_published_at ON letterbox_outbox (published_at) WHERE status = 1;

-- When a head is published (or an unpublished head is deleted by hand), the next unpublished
-- row of its aggregate becomes the head, in the same statement.
CREATE TRIGGER letterbox_outbox_head_published
AFTER UPDATE OF status ON letterbox_outbox
FOR EACH ROW WHEN NEW.status = 1 AND OLD.status <> 1 AND NEW.aggregate_id <> ''
BEGIN
    UPDATE letterbox_outbox SET aggregate_head = 1 WHERE sequence = (
        SELECT sequence FROM letterbox_outbox
        WHERE aggregate_type = NEW.aggregate_type AND aggregate_id = NEW.aggregate_id
          AND status <> 1
        ORDER BY sequence LIMIT 1);
END;
CREATE TRIGGER letterbox_outbox_head_deleted
AFTER DELETE ON letterbox_outbox
FOR EACH ROW WHEN OLD.status <> 1 AND OLD.aggregate_head = 1 AND OLD.aggregate_id <> ''
BEGIN
    UPDATE letterbox_outbox SET aggregate_head = 1 WHERE sequence = (
        SELECT sequence FROM letterbox_outbox
        WHERE aggregate_type = OLD.aggregate_type AND aggregate_id = OLD.aggregate_id
          AND status <> 1
        ORDER BY sequence LIMIT 1);
END;

CREATE TABLE letterbox_inbox (
    consumer_id TEXT    NOT NULL,
    message_id  TEXT    NOT NULL,
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (consumer_id, message_id)
) WITHOUT ROWID;
CREATE INDEX letterbox_inbox_recorded_at ON letterbox_inbox (recorded_at);
)sql"},
        {2, "outbox delivery state out of the event rows",
         // The relay rewrote each event row twice with its payload (claim, then mark), and
         // every rewrite touched five indexes and a trigger. The event row is now written once;
         // the delivery state lives in narrow tables: the unpublished rows (pending or parked:
         // the relay's work) and the published ones. Per-aggregate order is a chain (each
         // unpublished row names the next one of its aggregate, and a lane names each
         // aggregate's last one) instead of an index keyed by aggregate, whose pages a batch of
         // marks dirtied all over. Rows in flight keep their status, lease, attempts and error;
         // the AUTOINCREMENT high-water mark is kept, so no sequence is reused.
         R"sql(
CREATE TABLE letterbox_outbox_v2 (
    sequence       INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id     TEXT    NOT NULL UNIQUE,
    aggregate_type TEXT    NOT NULL,
    aggregate_id   TEXT    NOT NULL,
    event_type     TEXT    NOT NULL,
    exchange       TEXT    NOT NULL,
    routing_key    TEXT    NOT NULL,
    headers        BLOB    NOT NULL,
    properties     BLOB    NOT NULL,
    payload        BLOB    NOT NULL,
    created_at     INTEGER NOT NULL
);
-- A pending (0) or parked (2) event: exactly the events that hold back their aggregate.
CREATE TABLE letterbox_outbox_unpublished (
    sequence         INTEGER PRIMARY KEY,
    status           INTEGER NOT NULL CHECK (status IN (0, 2)),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    last_error       TEXT    NOT NULL DEFAULT '',
    last_failure_at  INTEGER,
    lease_owner      TEXT    NOT NULL DEFAULT '',
    lease_expires_at INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    aggregate_type   TEXT    NOT NULL,
    aggregate_id     TEXT    NOT NULL,
    -- 1 when no earlier row of its aggregate is unpublished (or it has no aggregate): the only
    -- rows claim may hand out.
    aggregate_head   INTEGER NOT NULL DEFAULT 0,
    -- The next unpublished row of its aggregate, if any: it becomes the head when this one is
    -- published.
    next_sequence    INTEGER
);
-- The last unpublished row of each aggregate that has one: add links a new row after it.
CREATE TABLE letterbox_outbox_lane (
    aggregate_type TEXT    NOT NULL,
    aggregate_id   TEXT    NOT NULL,
    tail           INTEGER NOT NULL,
    PRIMARY KEY (aggregate_type, aggregate_id)
) WITHOUT ROWID;
CREATE TABLE letterbox_outbox_published (
    sequence        INTEGER PRIMARY KEY,
    published_at    INTEGER NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT    NOT NULL,
    last_failure_at INTEGER
);

INSERT INTO letterbox_outbox_v2 (sequence, message_id, aggregate_type, aggregate_id, event_type,
                                 exchange, routing_key, headers, properties, payload, created_at)
    SELECT sequence, message_id, aggregate_type, aggregate_id, event_type, exchange, routing_key,
           headers, properties, payload, created_at
    FROM letterbox_outbox;
-- The chains and the heads, from version 1's index of the unpublished rows by aggregate.
INSERT INTO letterbox_outbox_unpublished (sequence, status, attempts, next_attempt_at,
                                          last_error, last_failure_at, lease_owner,
                                          lease_expires_at, created_at, aggregate_type,
                                          aggregate_id, aggregate_head, next_sequence)
    SELECT r.sequence, r.status, r.attempts, r.next_attempt_at, r.last_error, r.last_failure_at,
           r.lease_owner, r.lease_expires_at, r.created_at, r.aggregate_type, r.aggregate_id,
           r.aggregate_id = '' OR NOT EXISTS (
               SELECT 1 FROM letterbox_outbox AS e
               WHERE e.aggregate_type = r.aggregate_type AND e.aggregate_id = r.aggregate_id
                 AND e.status <> 1 AND e.sequence < r.sequence),
           CASE WHEN r.aggregate_id = '' THEN NULL ELSE (
               SELECT min(e.sequence) FROM letterbox_outbox AS e
               WHERE e.aggregate_type = r.aggregate_type AND e.aggregate_id = r.aggregate_id
                 AND e.status <> 1 AND e.sequence > r.sequence) END
    FROM letterbox_outbox AS r WHERE r.status <> 1;
INSERT INTO letterbox_outbox_lane (aggregate_type, aggregate_id, tail)
    SELECT aggregate_type, aggregate_id, max(sequence) FROM letterbox_outbox
    WHERE status <> 1 AND aggregate_id <> '' GROUP BY aggregate_type, aggregate_id;
INSERT INTO letterbox_outbox_published (sequence, published_at, attempts, next_attempt_at,
                                        last_error, last_failure_at)
    SELECT sequence, coalesce(published_at, 0), attempts, next_attempt_at, last_error,
           last_failure_at
    FROM letterbox_outbox WHERE status = 1;
-- Sequences are never reused, even those of purged rows: carry the high-water mark over.
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'letterbox_outbox_v2', 0
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'letterbox_outbox_v2');
UPDATE sqlite_sequence SET seq = max(seq, coalesce(
        (SELECT max(seq) FROM sqlite_sequence WHERE name = 'letterbox_outbox'), 0))
    WHERE name = 'letterbox_outbox_v2';
DROP TABLE letterbox_outbox; -- with its indexes and triggers
ALTER TABLE letterbox_outbox_v2 RENAME TO letterbox_outbox;

-- claim: the pending heads of their aggregates, in sequence order.
CREATE INDEX letterbox_outbox_claimable
    ON letterbox_outbox_unpublished (sequence) WHERE status = 0 AND aggregate_head = 1;
-- list of the parked rows (few).
CREATE INDEX letterbox_outbox_parked ON letterbox_outbox_unpublished (sequence) WHERE status = 2;
-- purge_published.
CREATE INDEX letterbox_outbox_published_at ON letterbox_outbox_published (published_at);

-- An event deleted by hand (an operator's DELETE, or purge_published) takes its delivery state
-- with it. An unpublished one is unlinked from its aggregate's chain: the row before it links
-- to the row after it, the lane ends at the row before it, and the row after it becomes the
-- head if it was the head.
CREATE TRIGGER letterbox_outbox_published_deleted
AFTER DELETE ON letterbox_outbox
FOR EACH ROW
BEGIN
    DELETE FROM letterbox_outbox_published WHERE sequence = OLD.sequence;
END;
CREATE TRIGGER letterbox_outbox_unpublished_deleted
AFTER DELETE ON letterbox_outbox
FOR EACH ROW
WHEN EXISTS (SELECT 1 FROM letterbox_outbox_unpublished WHERE sequence = OLD.sequence)
BEGIN
    UPDATE letterbox_outbox_lane
    SET tail = coalesce((SELECT sequence FROM letterbox_outbox_unpublished
                         WHERE next_sequence = OLD.sequence), -1)
    WHERE aggregate_type = OLD.aggregate_type AND aggregate_id = OLD.aggregate_id
      AND tail = OLD.sequence;
    DELETE FROM letterbox_outbox_lane
    WHERE aggregate_type = OLD.aggregate_type AND aggregate_id = OLD.aggregate_id AND tail = -1;
    UPDATE letterbox_outbox_unpublished
    SET next_sequence = (SELECT next_sequence FROM letterbox_outbox_unpublished
                         WHERE sequence = OLD.sequence)
    WHERE next_sequence = OLD.sequence;
    UPDATE letterbox_outbox_unpublished SET aggregate_head = 1
    WHERE sequence = (SELECT next_sequence FROM letterbox_outbox_unpublished
                      WHERE sequence = OLD.sequence AND aggregate_head = 1);
    DELETE FROM letterbox_outbox_unpublished WHERE sequence = OLD.sequence;
END;
)sql"},
        {3, "inbox message ids as their 16 bytes",
         // The inbox key held the id's 36 characters of text, in the table and again in the
         // recorded_at index. With the 16 bytes a record takes a third less space and SQLite
         // inserts it 1.4 times faster (docs/benchmarks.md, "The inbox key as 16 bytes").
         // `letterbox_uuid_bytes` is the function `migrate` lends this step: the bytes of a
         // UUID's text, or a value that is not one, unchanged (no key letterbox looks up).
         R"sql(
CREATE TABLE letterbox_inbox_v3 (
    consumer_id TEXT    NOT NULL,
    message_id  BLOB    NOT NULL,
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (consumer_id, message_id)
) WITHOUT ROWID;
INSERT INTO letterbox_inbox_v3 (consumer_id, message_id, recorded_at)
    SELECT consumer_id, letterbox_uuid_bytes(message_id), recorded_at FROM letterbox_inbox
    WHERE true ON CONFLICT DO NOTHING;
DROP TABLE letterbox_inbox; -- with its index
ALTER TABLE letterbox_inbox_v3 RENAME TO letterbox_inbox;
CREATE INDEX letterbox_inbox_recorded_at ON letterbox_inbox (recorded_at);
)sql"},
        {4, "saga instances and their timeouts",
         // One row per instance, keyed within its saga type by id and, uniquely, by
         // correlation: the keys decide which of two inserts wins, and `version` which of two
         // updates. The timeouts are rows of their own, so `due_timeouts` is one index range;
         // each write of an instance replaces them, and deleting the instance deletes them.
         R"sql(
CREATE TABLE letterbox_saga (
    saga_type   TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    correlation TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    data        TEXT    NOT NULL,
    finished    INTEGER NOT NULL CHECK (finished IN (0, 1)),
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (saga_type, id),
    UNIQUE (saga_type, correlation)
) WITHOUT ROWID;
-- purge_finished.
CREATE INDEX letterbox_saga_finished_updated_at ON letterbox_saga (updated_at) WHERE finished = 1;

CREATE TABLE letterbox_saga_timeout (
    saga_type TEXT    NOT NULL,
    id        TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    due_at    INTEGER NOT NULL,
    PRIMARY KEY (saga_type, id, name)
) WITHOUT ROWID;
-- due_timeouts.
CREATE INDEX letterbox_saga_timeout_due_at ON letterbox_saga_timeout (due_at);

-- An instance deleted (purge_finished, or an operator's DELETE) takes its timeouts with it.
CREATE TRIGGER letterbox_saga_deleted
AFTER DELETE ON letterbox_saga
FOR EACH ROW
BEGIN
    DELETE FROM letterbox_saga_timeout WHERE saga_type = OLD.saga_type AND id = OLD.id;
END;
)sql"},
        {5, "event streams, snapshots and projection checkpoints",
         // One row per event, never updated or deleted. The position is the rowid: a unit
         // appends at the last position plus one while it holds the write lock, and a
         // rolled-back insert leaves no row, so positions follow commit order without gaps.
         // AUTOINCREMENT would cost a write of sqlite_sequence per append, only to keep a
         // position deleted by hand from being given again; the store never deletes one.
         // UNIQUE (stream, version) is the index that reads a stream and finds its version, and
         // the backstop of `append`'s version check.
         // Snapshots are a cache of folds, apart from the events so that dropping them touches
         // no event. A state may be large, so the table keeps its rowid (a WITHOUT ROWID table
         // stores whole rows in its key's b-tree); the primary key is the index `latest` reads
         // backwards from a version. A checkpoint is one small row per projection, compared and
         // moved by `UPDATE ... WHERE position = ?` in the read model's unit.
         R"sql(
CREATE TABLE letterbox_event (
    position    INTEGER PRIMARY KEY CHECK (position >= 1),
    stream      TEXT    NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    id          BLOB    NOT NULL,
    type        TEXT    NOT NULL,
    data        TEXT    NOT NULL,
    metadata    TEXT    NOT NULL,
    recorded_at INTEGER NOT NULL,
    UNIQUE (stream, version)
);

CREATE TABLE letterbox_snapshot (
    stream       TEXT    NOT NULL,
    version      INTEGER NOT NULL CHECK (version >= 1),
    recorded_at  INTEGER NOT NULL,
    fold_version INTEGER NOT NULL,
    state        TEXT    NOT NULL,
    PRIMARY KEY (stream, version)
);

CREATE TABLE letterbox_checkpoint (
    name     TEXT    NOT NULL PRIMARY KEY,
    position INTEGER NOT NULL CHECK (position >= 0)
) WITHOUT ROWID;
)sql"},
    };
    return steps;
}

namespace detail {

/// `letterbox_uuid_bytes(text)`, the SQL function of schema step 3: the 16 bytes of a UUID
/// written as text, as a BLOB; any other value unchanged.
inline void uuid_bytes_function(sqlite3_context* context, int, sqlite3_value** args) {
    if (sqlite3_value_type(args[0]) == SQLITE_TEXT) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(args[0]));
        const auto size = static_cast<std::size_t>(sqlite3_value_bytes(args[0]));
        if (const auto id = parse_message_id(std::string_view(text, size))) {
            sqlite3_result_blob(context, id->data, static_cast<int>(id->size()), SQLITE_TRANSIENT);
            return;
        }
    }
    sqlite3_result_value(context, args[0]);
}

} // namespace detail

LETTERBOX_DECL int schema::installed_version(connection& conn, std::error_code& ec) {
    auto table = conn.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                              "'letterbox_schema_version'",
                              ec);
    if (ec)
        return 0;
    if (!table->step(ec))
        return 0;
    if (table->column_int64(0) == 0)
        return 0;
    auto row =
        conn.prepare("SELECT version FROM letterbox_schema_version WHERE component = ?1", ec);
    if (ec)
        return 0;
    if (auto bound = row->bind_text(1, component)) {
        ec = bound;
        return 0;
    }
    if (!row->step(ec))
        return 0;
    return static_cast<int>(row->column_int64(0));
}

LETTERBOX_DECL std::error_code schema::migrate(connection& conn) {
    std::error_code ec;
    // Read first: an up-to-date database needs no write lock, so opening it never waits for
    // a writer.
    int version = installed_version(conn, ec);
    if (ec)
        return ec;
    if (version > latest_version())
        return errc::store_schema_too_new;
    if (version == latest_version())
        return {};

    // What the steps' SQL calls besides SQLite's own functions (step 3).
    if (auto e = to_error_code(sqlite3_create_function_v2(
            conn.native_handle(), "letterbox_uuid_bytes", 1,
            SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, nullptr,
            &detail::uuid_bytes_function, nullptr, nullptr, nullptr)))
        return e;
    if (auto begun = conn.exec("BEGIN IMMEDIATE"))
        return begun;
    auto fail = [&](std::error_code e) {
        if (conn.in_transaction())
            (void)conn.exec("ROLLBACK"); // `e` is the error to report
        return e;
    };
    // Another connection may have migrated between the read and the lock: read again.
    version = installed_version(conn, ec);
    if (ec)
        return fail(ec);
    if (version > latest_version())
        return fail(errc::store_schema_too_new);
    if (auto e = conn.exec("CREATE TABLE IF NOT EXISTS letterbox_schema_version ("
                           "component TEXT PRIMARY KEY, version INTEGER NOT NULL)"))
        return fail(e);
    for (const auto& step : migrations()) {
        if (step.version <= version)
            continue;
        if (auto e = conn.exec(step.sql))
            return fail(e);
    }
    {
        auto record = conn.prepare("INSERT INTO letterbox_schema_version (component, version) "
                                   "VALUES (?1, ?2) ON CONFLICT (component) DO UPDATE SET "
                                   "version = excluded.version",
                                   ec);
        if (ec)
            return fail(ec);
        record->bind_text(1, component);
        record->bind_int64(2, latest_version());
        if (auto e = record->execute())
            return fail(e);
    }
    if (auto e = conn.exec("COMMIT"))
        return fail(e);
    return {};
}

} // namespace letterbox::sqlite
