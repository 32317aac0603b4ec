// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/append_result.hpp>
#include <letterbox/concepts/event_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/event_data.hpp>
#include <letterbox/expected_version.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

/// An `event_store` in the `letterbox_event` table of an SQLite database (schema version 5):
/// durable, and shared by every process that opens the file.
///
/// `append` writes inside the caller's `unit_of_work`, next to the business writes and the
/// outbox rows that publish the events, so they commit together or not at all. A unit holds the
/// database's write lock from `BEGIN IMMEDIATE` to its end, so units run one after the other,
/// and what a unit reads is what its commit keeps: `append` reads the stream's version (its
/// events committed, and those appended earlier in the same unit), compares it with the expected
/// version, and inserts the events at the next versions and at the positions after the store's
/// last one. So a conflict is known when `append` returns (`errc::concurrency_conflict`, nothing
/// written, the unit usable, `result` = {the stream's version, 0}); `commit()` reports one only
/// if the table's `UNIQUE (stream, version)` ever caught what the read did not (the unit is then
/// failed, and commits nothing). `result` is filled when `append` succeeds. Positions are the
/// table's rowids: the next one is the last one plus one, and a rolled-back unit leaves no row,
/// so they follow commit order without gaps. Reads (`read_stream`, `read_all`,
/// `stream_version`, `head_position`) borrow a connection from the pool, see committed events
/// only and never wait.
///
/// Streams, types, data and metadata are stored as given (TEXT, NUL bytes included); ids as
/// their 16 bytes. Times are stored as microseconds since the epoch (a finer part is dropped,
/// rounding toward the past), and never decrease along positions: `recorded_at` is `now`, or
/// the store's latest time if that is later. Write the table only through the store: it never
/// deletes an event, and a row deleted by hand would give its position to the next event.
///
/// Limits: one writer at a time (see `database`). Versions and positions are at most 2^63 - 1
/// (SQLite's integers).
///
/// Thread safety: every member function may be called concurrently.
///
/// Example:
///
///     letterbox::sqlite::event_store events(db);
///     std::error_code ec;
///     const auto seen = events.read_stream("account-42", 0, 1000, ec); // fold them
///     if (ec)
///         return ec;
///     const auto version = seen.empty() ? 0 : seen.back().version;
///     const letterbox::event_data deposited{ids(), "deposited", R"({"amount":10})", ""};
///     letterbox::append_result result; // holds once the unit commits
///     auto uow = events.begin();
///     if (auto e = events.append(uow, "account-42", letterbox::expected_version::exactly(version),
///                                {&deposited, 1}, clock.wall_now(), result);
///         e == letterbox::errc::concurrency_conflict)
///         return retry(); // another writer appended first: read the stream again
///     else if (e)
///         return e; // the unit rolls back when destroyed
///     return uow.commit(); // result.position: where a projection has to reach
class event_store {
public:
    using event_store_concept = event_store_tag;
    using unit_of_work_type = sqlite::unit_of_work;

    /// A store on `db`'s event table. It shares `db`'s pool (and keeps it alive).
    /// Precondition: `db.is_open()`.
    explicit event_store(const database& db) noexcept
        : db_(db.state()) {}

    /// Begins a unit of work on the store's database (`database::begin`): throws
    /// `letterbox::error` when the database stays locked or cannot be written.
    unit_of_work begin() { return database::attach(db_).begin(); }

    /// Appends `events`, in order, at the end of `stream` in `uow`'s transaction, stamped `now`
    /// (or the store's latest time if that is later), and sets `result` to the stream's new
    /// version and the position of the last event. Returns `errc::concurrency_conflict` when
    /// the stream, with the events `uow` appended to it already, is not at the version
    /// `expected` names: `result` is {that version, 0}, nothing is written, the unit stays
    /// usable. Also `errc::invalid_argument` for an empty `stream`, no event or an event
    /// without a type (nothing is written, the unit stays usable),
    /// `errc::precondition_failed` for a unit of another database, `errc::transaction_closed`
    /// when `uow` is finished, or a database error (which fails the unit, see `unit_of_work`).
    [[nodiscard]] std::error_code append(unit_of_work& uow, std::string_view stream,
                                         expected_version expected,
                                         std::span<const event_data> events, store_time now,
                                         append_result& result);

    /// Up to `limit` committed events of `stream` with a version above `after_version`, by
    /// version.
    std::vector<recorded_event> read_stream(std::string_view stream, std::uint64_t after_version,
                                            std::size_t limit, std::error_code& ec);

    /// Up to `limit` committed events of every stream with a position above `after_position`,
    /// by position.
    std::vector<recorded_event> read_all(std::uint64_t after_position, std::size_t limit,
                                         std::error_code& ec);

    /// The version of `stream`'s last committed event; 0 when it has none.
    std::uint64_t stream_version(std::string_view stream, std::error_code& ec);

    /// The position of the store's last committed event; 0 when it has none.
    std::uint64_t head_position(std::error_code& ec);

private:
    std::shared_ptr<detail::database_state> db_;
};

} // namespace letterbox::sqlite

#if LETTERBOX_HEADER_ONLY
#include <letterbox/sqlite/impl/event_store.hpp>
#endif
