// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/sqlite/event_store.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>
#include <letterbox/sqlite/detail/time.hpp>
#include <letterbox/sqlite/event_store.hpp>
#include <letterbox/sqlite/statement.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

// The columns of a recorded_event, in the order detail::read_recorded_event reads them.
#define LETTERBOX_SQLITE_EVENT_COLUMNS                                                             \
    "SELECT stream, version, position, id, type, data, metadata, recorded_at FROM "                \
    "letterbox_event "

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

namespace detail {

/// A count or a version as SQLite stores it: values beyond what an INTEGER holds become its
/// largest (no stored version or position is larger, so "above it" is nothing).
inline std::int64_t to_integer_column(std::uint64_t value) noexcept {
    constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    return static_cast<std::int64_t>(std::min(value, max));
}

/// Reads the event the statement stands on (the columns of LETTERBOX_SQLITE_EVENT_COLUMNS);
/// `errc::store_corrupt` for an id that is not 16 bytes, which the store never writes.
LETTERBOX_DECL std::error_code read_recorded_event(const statement& st, recorded_event& event) {
    const auto id = st.column_blob(3);
    if (id.size() != event.id.size())
        return errc::store_corrupt;
    event.stream = std::string(st.column_text(0));
    event.version = static_cast<std::uint64_t>(st.column_int64(1));  // >= 1 (a CHECK)
    event.position = static_cast<std::uint64_t>(st.column_int64(2)); // >= 1 (a CHECK)
    std::memcpy(event.id.data, id.data(), id.size());
    event.type = std::string(st.column_text(4));
    event.data = std::string(st.column_text(5));
    event.metadata = std::string(st.column_text(6));
    event.recorded_at = from_column(st.column_int64(7));
    return {};
}

/// The committed events that `sql` (LETTERBOX_SQLITE_EVENT_COLUMNS with a WHERE, an ORDER BY
/// and a LIMIT, whose parameters are `args`) selects, on a pooled connection.
template <class... Args>
std::vector<recorded_event> read_recorded_events(database_state* db, std::string_view sql,
                                                 std::error_code& ec, const Args&... args) {
    return run_for_result<std::vector<recorded_event>>(
        db, ec, [&](connection& c, std::vector<recorded_event>& events) -> std::error_code {
            events.clear(); // a retry starts over
            std::error_code e;
            auto st = prepare_bound(c, sql, e, args...);
            if (e)
                return e;
            while (st->step(e)) {
                if (auto corrupt = read_recorded_event(*st, events.emplace_back()))
                    return corrupt;
            }
            return e;
        });
}

/// The one integer that `sql` (a SELECT of one row, with `args` as its parameters) gives, on a
/// pooled connection; 0 for NULL.
template <class... Args>
std::uint64_t read_event_integer(database_state* db, std::string_view sql, std::error_code& ec,
                                 const Args&... args) {
    return run_for_result<std::uint64_t>(
        db, ec, [&](connection& c, std::uint64_t& value) -> std::error_code {
            std::error_code e;
            auto st = prepare_bound(c, sql, e, args...);
            if (e)
                return e;
            if (!st->step(e))
                return e ? e : make_error_code(errc::store_error);
            value = static_cast<std::uint64_t>(st->column_int64(0)); // NULL reads as 0
            return {};
        });
}

/// The version of `stream` that the transaction on `c` sees: its committed events and those
/// staged in the same transaction. 0 for a stream without events.
LETTERBOX_DECL std::uint64_t staged_stream_version(connection& c, std::string_view stream,
                                                   std::error_code& ec) {
    auto st =
        prepare_bound(c, "SELECT max(version) FROM letterbox_event WHERE stream = ?1", ec, stream);
    if (ec)
        return 0;
    if (!st->step(ec)) {
        if (!ec)
            ec = errc::store_error; // an aggregate always gives a row
        return 0;
    }
    return static_cast<std::uint64_t>(st->column_int64(0)); // NULL (no event) reads as 0
}

/// The store's last event as the transaction on `c` sees it: its position (0: none) and its
/// time (the INTEGER microseconds of `recorded_at`; the earliest for none).
struct last_event {
    std::uint64_t position = 0;
    std::int64_t recorded_at = std::numeric_limits<std::int64_t>::min();
};

LETTERBOX_DECL last_event staged_last_event(connection& c, std::error_code& ec) {
    last_event last;
    auto st = c.prepare(
        "SELECT position, recorded_at FROM letterbox_event ORDER BY position DESC LIMIT 1", ec);
    if (ec)
        return last;
    if (st->step(ec)) {
        last.position = static_cast<std::uint64_t>(st->column_int64(0));
        last.recorded_at = st->column_int64(1);
    }
    return last;
}

} // namespace detail

LETTERBOX_DECL std::error_code event_store::append(unit_of_work& uow, std::string_view stream,
                                                   expected_version expected,
                                                   std::span<const event_data> events,
                                                   store_time now, append_result& result) {
    if (!db_)
        return errc::closed;
    if (auto ec = uow.check_writable(*db_))
        return ec;
    if (stream.empty() || events.empty())
        return errc::invalid_argument;
    if (std::any_of(events.begin(), events.end(),
                    [](const event_data& e) { return e.type.empty(); }))
        return errc::invalid_argument;

    auto& conn = uow.connection();
    std::error_code ec;
    // The unit holds the write lock from BEGIN IMMEDIATE: no other unit can append between this
    // read and the commit, so the version read here is the one the commit keeps, and it counts
    // what this unit appended to the stream before.
    const std::uint64_t current = detail::staged_stream_version(conn, stream, ec);
    if (!ec && !expected.admits(current)) {
        result = {current, 0};
        return errc::concurrency_conflict; // nothing written: the unit stays usable
    }
    detail::last_event last;
    if (!ec)
        last = detail::staged_last_event(conn, ec);
    // Times never decrease along positions.
    const std::int64_t recorded_at = std::max(detail::to_column(now), last.recorded_at);
    // The next position is the last one plus one, as SQLite would pick the rowid: nothing is
    // ever deleted, and a rolled-back insert leaves no row, so positions have no gaps.
    std::uint64_t version = current;
    std::uint64_t position = last.position;
    for (const auto& event : events) {
        if (ec)
            break;
        ++version;
        ++position;
        auto st = detail::prepare_bound(
            conn,
            "INSERT INTO letterbox_event (position, stream, version, id, type, data, metadata, "
            "recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            ec, static_cast<std::int64_t>(position), stream, static_cast<std::int64_t>(version),
            detail::blob{
                std::string_view(reinterpret_cast<const char*>(event.id.data), event.id.size())},
            event.type, event.data, event.metadata, recorded_at);
        if (!ec)
            ec = st->execute();
    } // each statement is reset before the next runs on the connection
    if (ec) {
        // UNIQUE (stream, version) and the primary key back the read above: were they ever to
        // refuse a row, another writer got there first. Rows of this append may be staged
        // already, so the unit is failed either way, and its commit reports the conflict.
        if (ec == errc::store_error && (conn.last_result_code() == SQLITE_CONSTRAINT_UNIQUE ||
                                        conn.last_result_code() == SQLITE_CONSTRAINT_PRIMARYKEY))
            ec = errc::concurrency_conflict;
        uow.fail(ec);
        return ec;
    }
    // Known now, and what the commit keeps: no other unit writes before it.
    result = {version, position};
    return {};
}

LETTERBOX_DECL std::vector<recorded_event> event_store::read_stream(std::string_view stream,
                                                                    std::uint64_t after_version,
                                                                    std::size_t limit,
                                                                    std::error_code& ec) {
    return detail::read_recorded_events(
        db_.get(),
        LETTERBOX_SQLITE_EVENT_COLUMNS "WHERE stream = ?1 AND version > ?2 ORDER BY version "
                                       "LIMIT ?3",
        ec, stream, detail::to_integer_column(after_version), detail::to_integer_column(limit));
}

LETTERBOX_DECL std::vector<recorded_event>
event_store::read_all(std::uint64_t after_position, std::size_t limit, std::error_code& ec) {
    return detail::read_recorded_events(
        db_.get(), LETTERBOX_SQLITE_EVENT_COLUMNS "WHERE position > ?1 ORDER BY position LIMIT ?2",
        ec, detail::to_integer_column(after_position), detail::to_integer_column(limit));
}

LETTERBOX_DECL std::uint64_t event_store::stream_version(std::string_view stream,
                                                         std::error_code& ec) {
    return detail::read_event_integer(
        db_.get(), "SELECT max(version) FROM letterbox_event WHERE stream = ?1", ec, stream);
}

LETTERBOX_DECL std::uint64_t event_store::head_position(std::error_code& ec) {
    return detail::read_event_integer(db_.get(), "SELECT max(position) FROM letterbox_event", ec);
}

} // namespace letterbox::sqlite

#undef LETTERBOX_SQLITE_EVENT_COLUMNS
