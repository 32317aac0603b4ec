// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/snapshot_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/snapshot.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// A `snapshot_store` in the `letterbox_snapshot` table of an SQLite database (schema version
/// 5): durable, and shared by every process that opens the file.
///
/// `save` writes inside the caller's `unit_of_work`, so a snapshot commits with the unit that
/// took it (the one that appended the events it folds, say) or not at all. It is `INSERT ...
/// ON CONFLICT (stream, version) DO UPDATE`: a snapshot of the same stream and version replaces
/// the stored one, whether that one is committed or saved earlier in the same unit. `latest` is
/// one `SELECT` on a pooled connection, which reads the table's primary key backwards from
/// `version`: committed snapshots only, never waiting. `drop` is one `DELETE` of its own.
///
/// Streams and states are stored as given (TEXT, NUL bytes included). Times are stored as
/// microseconds since the epoch (a finer part is dropped, rounding toward the past), and
/// `latest` compares them at that precision: keep `recorded_at` the time of the event at
/// `version` as the event store gave it, which `sqlite::event_store` stores in microseconds
/// too. Rows may be deleted by hand at any time, as `drop` does: a snapshot is a cache, and the
/// next loads fold from the events.
///
/// Limits: one writer at a time (see `database`); `drop` waits for the write lock, so call it
/// outside any unit of work on this database. Versions are at most 2^63 - 1 (SQLite's
/// integers): `save` refuses a larger one with `errc::invalid_argument`.
///
/// Thread safety: every member function may be called concurrently.
///
/// Example:
///
///     letterbox::sqlite::snapshot_store snapshots(db);
///     std::error_code ec;
///     const auto snap = snapshots.latest("account-42", UINT64_MAX, letterbox::store_time::max(),
///                                        ec);
///     if (ec)
///         return ec;
///     // ... fold the events after snap->version (or all of them) into `state`, then:
///     auto uow = db.begin();
///     if (auto e = snapshots.save(uow, {"account-42", version, last_event_time, fold_version,
///                                       state.dump()}))
///         return e; // the unit rolls back when destroyed
///     return uow.commit();
class snapshot_store {
public:
    using snapshot_store_concept = snapshot_store_tag;
    using unit_of_work_type = sqlite::unit_of_work;

    /// A store on `db`'s snapshot table. It shares `db`'s pool (and keeps it alive).
    /// Precondition: `db.is_open()`.
    explicit snapshot_store(const database& db) noexcept
        : db_(db.state()) {}

    /// Begins a unit of work on the store's database (`database::begin`): throws
    /// `letterbox::error` when the database stays locked or cannot be written.
    unit_of_work begin() { return database::attach(db_).begin(); }

    /// Writes `snap` in `uow`'s transaction, replacing a snapshot of the same stream and
    /// version. Returns `errc::invalid_argument` for an empty stream, or a version of 0 or
    /// above 2^63 - 1 (nothing is written, the unit stays usable); `errc::precondition_failed`
    /// for a unit of another database; `errc::transaction_closed` when `uow` is finished; or a
    /// database error (which fails the unit, see `unit_of_work`).
    [[nodiscard]] std::error_code save(unit_of_work& uow, const snapshot& snap);

    /// The committed snapshot of `stream` with the highest version among those whose version is
    /// at most `version` and whose `recorded_at` is at most `time`; none when there is none.
    std::optional<snapshot> latest(std::string_view stream, std::uint64_t version, store_time time,
                                   std::error_code& ec);

    /// Deletes every snapshot of `stream`, on a connection of its own; returns how many. An
    /// empty `stream` is `errc::invalid_argument` (nothing is deleted).
    std::size_t drop(std::string_view stream, std::error_code& ec);

private:
    std::shared_ptr<detail::database_state> db_;
};

} // namespace letterbox::sqlite

#if LETTERBOX_HEADER_ONLY
#include <letterbox/sqlite/impl/snapshot_store.hpp>
#endif
