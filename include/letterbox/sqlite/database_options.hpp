// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// How a `database` opens and configures its connections, and how it waits for a lock that
/// another writer holds. Every field has a default suited to a service that owns its database
/// file on a local disk.
///
/// Each connection is opened with `SQLITE_OPEN_NOMUTEX` (one thread uses a connection at a
/// time; the pool hands it out), then runs `PRAGMA journal_mode=WAL` (not when `read_only`),
/// `busy_timeout`, `foreign_keys=ON`, `synchronous` and finally `pragmas`, in that order.
///
/// Waiting for the write lock happens at two levels. SQLite's busy handler sleeps and retries
/// for up to `busy_timeout`; if the lock is still held, letterbox retries the whole operation
/// (`BEGIN IMMEDIATE` of a unit of work, or a store operation that writes) at most
/// `max_busy_retries` more times, after an exponential backoff with jitter, and then reports
/// `errc::store_busy`. Nothing was written when that happens.
///
/// Example:
///
///     letterbox::sqlite::database_options options;
///     options.busy_timeout = std::chrono::milliseconds(2000);
///     options.synchronous = letterbox::sqlite::database_options::synchronous_mode::full;
///     auto db = letterbox::sqlite::database::open("orders.db", options);
struct database_options {
    /// `PRAGMA synchronous`. In WAL mode, `normal` loses no committed transaction on a process
    /// crash, but may lose the last ones on a power loss or OS crash; `full` syncs the WAL on
    /// every commit and loses nothing; `off` is for tests.
    enum class synchronous_mode { off, normal, full, extra };

    /// How long SQLite's busy handler waits for a lock before giving up (`busy_timeout`).
    std::chrono::milliseconds busy_timeout{5000};
    synchronous_mode synchronous = synchronous_mode::normal;

    /// How many times an operation that still found the database locked after `busy_timeout`
    /// is tried again before it fails with `errc::store_busy`.
    unsigned max_busy_retries = 3;
    /// The backoff before retry `n` (from 0) is `min(busy_retry_max_delay, base * 2^n)`,
    /// of which a random half is jitter: the delay is uniform in [d/2, d].
    std::chrono::milliseconds busy_retry_base_delay{20};
    std::chrono::milliseconds busy_retry_max_delay{1000};
    /// Seed of the jitter; 0 seeds from `std::random_device`.
    std::uint64_t jitter_seed = 0;
    /// Called before each backoff of a busy retry with the retry's number (1 for the first)
    /// and the delay it is about to sleep, on the thread that retries (so possibly on several
    /// threads at once). For logs, metrics and tests.
    std::function<void(unsigned retry, std::chrono::milliseconds delay)> on_busy_retry;

    /// Extra pragmas run on every new connection after the standard ones, each without the
    /// `PRAGMA` keyword, e.g. `"cache_size = -16000"` or `"max_page_count = 1000"`.
    std::vector<std::string> pragmas;

    /// Run `PRAGMA quick_check` when the database is opened, so that damage anywhere in the
    /// file (not only in the schema page that every open reads) is reported at open as
    /// `errc::store_corrupt`. It reads the whole file: off by default.
    bool quick_check_on_open = false;
    /// Create the file when it does not exist; otherwise a missing file is
    /// `errc::store_unavailable`.
    bool create_if_missing = true;
    /// Give a file that has no letterbox schema (a new or 0-byte file, or another
    /// application's database) letterbox's tables. With `false`, such a file is refused with
    /// `errc::store_not_a_database` and left exactly as it was (it is checked through a
    /// read-only connection before anything is written); a file with an older letterbox schema
    /// is still migrated. For tools that must act on an existing letterbox database only.
    bool create_schema_if_missing = true;
    /// Open every connection with `SQLITE_OPEN_READONLY`: nothing in the file changes, not even
    /// its journal mode (no `journal_mode=WAL`, no migration, no file is created). The file
    /// must already hold letterbox's schema at `schema::latest_version()`: a file without it
    /// is `errc::store_not_a_database`, one with an older version `errc::store_schema_too_old`
    /// (a read-only open cannot migrate it; open it once for writing, which migrates it), one
    /// with a newer version `errc::store_schema_too_new`.
    /// Reads work as usual; `begin()` and every store write fail with `errc::store_readonly`.
    /// For inspection tools (`letterbox outbox status`). A WAL database is read as SQLite reads
    /// one read-only: through its `-wal` and `-shm` files, which SQLite creates when they are
    /// missing and the directory is writable (and cannot remove when it closes); the database
    /// file itself is never written.
    bool read_only = false;

    /// Connections the pool keeps open while nobody uses them; more are opened on demand
    /// (one per concurrent unit of work or store operation) and closed when returned beyond
    /// this number.
    std::size_t max_idle_connections = 4;
    /// Prepared statements each connection caches, by SQL text. Statements beyond it are
    /// prepared for one use and finalized.
    std::size_t statement_cache_capacity = 64;
};

} // namespace letterbox::sqlite
