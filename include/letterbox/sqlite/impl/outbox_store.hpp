// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/sqlite/outbox_store.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/payload.hpp>
#include <letterbox/sqlite/detail/codec.hpp>
#include <letterbox/sqlite/detail/time.hpp>
#include <letterbox/sqlite/outbox_store.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The columns of an outbox_record, in the order detail::read_outbox_record reads them.
#define LETTERBOX_SQLITE_OUTBOX_COLUMNS                                                            \
    "sequence, message_id, aggregate_type, aggregate_id, event_type, exchange, routing_key, "      \
    "headers, properties, payload, created_at, status, attempts, next_attempt_at, last_error, "    \
    "last_failure_at, lease_owner, lease_expires_at, published_at"

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

namespace detail {

LETTERBOX_DECL std::int64_t status_column(outbox_status s) noexcept {
    switch (s) {
    case outbox_status::pending:
        return 0;
    case outbox_status::published:
        return 1;
    case outbox_status::parked:
        return 2;
    }
    return 0;
}

LETTERBOX_DECL std::int64_t clamp_to_int64(std::size_t n) noexcept {
    return static_cast<std::int64_t>(std::min<std::size_t>(
        n, static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())));
}

/// Reads the row the statement stands on (columns `LETTERBOX_SQLITE_OUTBOX_COLUMNS`).
/// A value letterbox cannot have written is `errc::store_corrupt`; `what` (if given) then says
/// which columns are wrong.
LETTERBOX_DECL std::error_code read_outbox_record(const statement& st, outbox_record& r,
                                                  std::string* what = nullptr) {
    r.sequence = static_cast<std::uint64_t>(st.column_int64(0));
    const auto id = parse_message_id(st.column_text(1));
    auto headers = decode_headers(st.column_blob(7));
    auto properties = decode_properties(st.column_blob(8));
    const auto status = st.column_int64(11);
    const auto attempts = st.column_int64(12);
    const bool status_ok = status >= 0 && status <= 2;
    const bool attempts_ok = attempts >= 0 && attempts <= std::numeric_limits<std::uint32_t>::max();
    if (!id || !headers || !properties || !status_ok || !attempts_ok) {
        if (what) {
            what->clear();
            const auto add = [what](std::string_view problem) {
                if (!what->empty())
                    *what += "; ";
                *what += problem;
            };
            if (!id)
                add("message_id is not a UUID");
            if (!headers)
                add("headers are not letterbox's encoding");
            if (!properties)
                add("properties are not letterbox's encoding");
            if (!status_ok)
                add("status " + std::to_string(status) + " is not 0, 1 or 2");
            if (!attempts_ok)
                add("attempts " + std::to_string(attempts) + " is out of range");
        }
        return errc::store_corrupt;
    }
    r.msg.id = *id;
    r.aggregate_type = std::string(st.column_text(2));
    r.aggregate_id = std::string(st.column_text(3));
    r.msg.type = std::string(st.column_text(4));
    r.msg.exchange = std::string(st.column_text(5));
    r.msg.routing_key = std::string(st.column_text(6));
    r.msg.headers = std::move(*headers);
    r.msg.properties = std::move(*properties);
    r.msg.body = std::string(st.column_blob(9));
    r.created_at = from_column(st.column_int64(10));
    r.status = status == 0 ? outbox_status::pending
                           : (status == 1 ? outbox_status::published : outbox_status::parked);
    r.attempts = static_cast<std::uint32_t>(attempts);
    r.next_attempt_at = from_column(st.column_int64(13));
    r.last_error = std::string(st.column_text(14));
    r.last_failure_at = st.column_is_null(15)
                            ? std::nullopt
                            : std::optional<store_time>(from_column(st.column_int64(15)));
    r.lease_owner = std::string(st.column_text(16));
    r.lease_expires_at = from_column(st.column_int64(17));
    r.published_at = st.column_is_null(18)
                         ? std::nullopt
                         : std::optional<store_time>(from_column(st.column_int64(18)));
    return {};
}

/// Reads every row of a prepared SELECT of `LETTERBOX_SQLITE_OUTBOX_COLUMNS`. The first
/// unreadable row fails the whole read (`errc::store_corrupt`), unless `unreadable` is given:
/// then each one is reported there and the read goes on.
LETTERBOX_DECL std::error_code
read_outbox_records(statement& st, std::vector<outbox_record>& rows,
                    std::vector<outbox_row_error>* unreadable = nullptr) {
    std::error_code ec;
    while (st.step(ec)) {
        outbox_record r;
        std::string what;
        if (auto bad = read_outbox_record(st, r, unreadable ? &what : nullptr)) {
            if (!unreadable)
                return bad;
            unreadable->push_back({static_cast<std::uint64_t>(st.column_int64(0)),
                                   std::string(st.column_text(1)), std::move(what)});
            continue;
        }
        rows.push_back(std::move(r));
    }
    return ec;
}

} // namespace detail

LETTERBOX_DECL std::error_code outbox_store::add(unit_of_work& uow, const outbox_entry& entry,
                                                 store_time now) {
    if (!db_)
        return errc::closed;
    if (auto ec = uow.check_writable(*db_))
        return ec;
    if (entry.msg.id.is_nil())
        return errc::precondition_failed;
    if (auto invalid = validate_payload(entry.msg))
        return invalid;
    const auto headers = detail::encode_headers(entry.msg.headers);
    if (!headers)
        return errc::payload_unencodable; // nested deeper than detail::codec_max_depth

    auto& conn = uow.connection();
    std::error_code ec;
    {
        auto st = conn.prepare(
            // A new row heads its aggregate when no row of it is unpublished: its sequence is
            // the largest, so any unpublished row of the aggregate comes before it.
            "INSERT INTO letterbox_outbox (message_id, aggregate_type, aggregate_id, event_type, "
            "exchange, routing_key, headers, properties, payload, created_at, status, attempts, "
            "next_attempt_at, aggregate_head) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, 0, ?10, ?3 = '' OR NOT EXISTS ("
            "SELECT 1 FROM letterbox_outbox WHERE aggregate_type = ?2 AND aggregate_id = ?3 "
            "AND status <> 1))",
            ec);
        if (!ec) {
            const auto& m = entry.msg;
            const std::string id = letterbox::to_string(m.id);
            const std::string properties = detail::encode_properties(m.properties);
            std::error_code bound;
            for (auto b : {st->bind_text(1, id), st->bind_text(2, entry.aggregate_type),
                           st->bind_text(3, entry.aggregate_id), st->bind_text(4, m.type),
                           st->bind_text(5, m.exchange), st->bind_text(6, m.routing_key),
                           st->bind_blob(7, *headers), st->bind_blob(8, properties),
                           st->bind_blob(9, m.body), st->bind_int64(10, detail::to_column(now))})
                if (b && !bound)
                    bound = b;
            ec = bound ? bound : st->execute();
        }
    } // the statement is reset before anything else runs on the connection
    if (!ec)
        return {};
    // The unique index on message_id is the arbiter of duplicates, staged in this unit or
    // committed: only the failed statement is undone, and the unit stays usable.
    if (ec == errc::store_error && conn.last_result_code() == SQLITE_CONSTRAINT_UNIQUE)
        return errc::duplicate_message_id;
    uow.fail(ec);
    return ec;
}

LETTERBOX_DECL std::vector<outbox_record> outbox_store::claim(std::string_view owner,
                                                              std::size_t max_rows,
                                                              store_time::duration lease,
                                                              store_time now, std::error_code& ec) {
    std::vector<outbox_record> batch;
    ec.clear();
    if (!db_) {
        ec = errc::closed;
        return batch;
    }
    if (owner.empty()) {
        ec = errc::precondition_failed;
        return batch;
    }
    if (max_rows == 0)
        return batch;
    const std::int64_t now_column = detail::to_column(now);
    const std::int64_t expires_column = detail::to_column(now + lease);

    ec = db_->run([&](connection& c) -> std::error_code {
        batch.clear();
        detail::write_transaction tx(c);
        if (auto e = tx.begin())
            return e;
        std::error_code e;
        {
            // Only the heads of their aggregates are in the claimable index (see schema), so
            // rows queued behind an unpublished row are never even read, and the scan in
            // sequence order stops after `max_rows` hits. The NOT EXISTS restates the rule the
            // index is kept for; it costs one probe per candidate.
            auto select = detail::prepare_bound(
                c,
                "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS
                " FROM letterbox_outbox AS o INDEXED BY letterbox_outbox_claimable"
                " WHERE o.status = 0 AND o.aggregate_head = 1 AND o.next_attempt_at <= ?1"
                " AND (o.lease_owner = '' OR o.lease_expires_at <= ?1)"
                " AND (o.aggregate_id = '' OR NOT EXISTS ("
                "SELECT 1 FROM letterbox_outbox AS e"
                " INDEXED BY letterbox_outbox_unpublished_by_aggregate"
                " WHERE e.aggregate_type = o.aggregate_type AND e.aggregate_id = o.aggregate_id"
                " AND e.sequence < o.sequence AND e.status <> 1))"
                " ORDER BY o.sequence LIMIT ?2",
                e, now_column, detail::clamp_to_int64(max_rows));
            if (e)
                return e;
            if (auto read = detail::read_outbox_records(*select, batch))
                return read;
        }
        if (batch.empty())
            return tx.commit();
        auto update = c.prepare("UPDATE letterbox_outbox SET lease_owner = ?1, "
                                "lease_expires_at = ?2 WHERE sequence = ?3",
                                e);
        if (e)
            return e;
        for (auto& row : batch) {
            update->bind_text(1, owner);
            update->bind_int64(2, expires_column);
            update->bind_int64(3, static_cast<std::int64_t>(row.sequence));
            if (auto u = update->execute())
                return u;
            update->reset();
        }
        if (auto committed = tx.commit())
            return committed;
        for (auto& row : batch) {
            row.lease_owner = std::string(owner);
            row.lease_expires_at = detail::from_column(expires_column);
        }
        return {};
    });
    if (ec)
        batch.clear();
    return batch;
}

LETTERBOX_DECL std::error_code outbox_store::classify_miss(connection& c, std::string_view id,
                                                           errc otherwise) {
    std::error_code ec;
    auto st =
        detail::prepare_bound(c, "SELECT 1 FROM letterbox_outbox WHERE message_id = ?1", ec, id);
    if (ec)
        return ec;
    const bool found = st->step(ec);
    if (ec)
        return ec;
    return found ? make_error_code(otherwise) : make_error_code(errc::record_not_found);
}

template <class... Args>
std::error_code outbox_store::update_row(const message_id& id, errc otherwise, std::string_view sql,
                                         const Args&... args) {
    if (!db_)
        return errc::closed;
    const std::string key = letterbox::to_string(id);
    return db_->run([&](connection& c) -> std::error_code {
        std::error_code ec;
        {
            auto st = detail::prepare_bound(c, sql, ec, key, args...);
            if (ec)
                return ec;
            if (auto e = st->execute())
                return e;
        } // the statement is reset before classify_miss runs on the connection
        if (c.changes() == 1)
            return {};
        return classify_miss(c, key, otherwise);
    });
}

LETTERBOX_DECL std::error_code
outbox_store::mark_published(const message_id& id, std::string_view owner, store_time now) {
    // One statement: the ownership check and the change are atomic, and so is the trigger that
    // makes the next row of the aggregate its head.
    return update_row(id, errc::lease_lost,
                      "UPDATE letterbox_outbox SET status = 1, published_at = ?3, "
                      "lease_owner = '', lease_expires_at = 0, aggregate_head = 0 "
                      "WHERE message_id = ?1 "
                      "AND status = 0 AND lease_owner = ?2 AND lease_owner <> ''",
                      owner, detail::to_column(now));
}

LETTERBOX_DECL std::error_code outbox_store::mark_published(std::span<const message_id> ids,
                                                            std::string_view owner, store_time now,
                                                            std::vector<std::error_code>& results) {
    results.clear();
    if (!db_) {
        results.assign(ids.size(), make_error_code(errc::closed));
        return errc::closed;
    }
    if (ids.empty())
        return {};
    const auto ec = db_->run([&](connection& c) -> std::error_code {
        results.clear();
        detail::write_transaction tx(c);
        if (auto e = tx.begin())
            return e;
        std::error_code e;
        // The same SQL text as the single mark_published: one cached statement.
        auto st = c.prepare("UPDATE letterbox_outbox SET status = 1, published_at = ?3, "
                            "lease_owner = '', lease_expires_at = 0, aggregate_head = 0 "
                            "WHERE message_id = ?1 "
                            "AND status = 0 AND lease_owner = ?2 AND lease_owner <> ''",
                            e);
        if (e)
            return e;
        const std::int64_t published_at = detail::to_column(now);
        for (const auto& id : ids) {
            const std::string key = letterbox::to_string(id);
            st->bind_text(1, key);
            st->bind_text(2, owner);
            st->bind_int64(3, published_at);
            if (auto x = st->execute())
                return x;
            st->reset();
            if (c.changes() == 1) {
                results.emplace_back();
                continue;
            }
            const auto miss = classify_miss(c, key, errc::lease_lost);
            if (detail::is_driver_error(miss))
                return miss;
            results.push_back(miss);
        }
        return tx.commit();
    });
    if (ec)
        results.assign(ids.size(), ec);
    return ec;
}

LETTERBOX_DECL std::error_code
outbox_store::record_failure(const message_id& id, std::string_view owner, std::string_view error,
                             store_time next_attempt_at, std::uint32_t max_attempts,
                             store_time now) {
    // The right-hand sides see the row before the update: attempts + 1 is the new count.
    return update_row(
        id, errc::lease_lost,
        "UPDATE letterbox_outbox SET attempts = attempts + 1, last_error = ?3, "
        "last_failure_at = ?4, lease_owner = '', lease_expires_at = 0, "
        "next_attempt_at = ?5, status = CASE WHEN attempts + 1 >= ?6 THEN 2 ELSE 0 END "
        "WHERE message_id = ?1 AND status = 0 AND lease_owner = ?2 AND lease_owner <> ''",
        owner, error, detail::to_column(now), detail::to_column(next_attempt_at),
        static_cast<std::int64_t>(max_attempts));
}

LETTERBOX_DECL std::error_code outbox_store::park(const message_id& id, std::string_view reason) {
    return update_row(id, errc::invalid_state,
                      "UPDATE letterbox_outbox SET status = 2, last_error = ?2, "
                      "lease_owner = '', lease_expires_at = 0 "
                      "WHERE message_id = ?1 AND status <> 1",
                      reason);
}

LETTERBOX_DECL std::error_code outbox_store::unpark(const message_id& id, store_time now) {
    return update_row(id, errc::invalid_state,
                      "UPDATE letterbox_outbox SET status = 0, attempts = 0, "
                      "next_attempt_at = ?2 WHERE message_id = ?1 AND status = 2",
                      detail::to_column(now));
}

LETTERBOX_DECL std::size_t outbox_store::release_expired_leases(store_time now,
                                                                std::error_code& ec) {
    // Only claim sets leases, and only on pending heads; settling and parking drop them, and a
    // head stays the head until it is published. So the claimable index holds every lease.
    return detail::count_changes_at(
        db_.get(),
        "UPDATE letterbox_outbox INDEXED BY letterbox_outbox_claimable "
        "SET lease_owner = '', lease_expires_at = 0 WHERE status = 0 AND aggregate_head = 1 "
        "AND lease_owner <> '' AND lease_expires_at <= ?1",
        now, ec);
}

LETTERBOX_DECL std::size_t outbox_store::purge_published(store_time older_than,
                                                         std::error_code& ec) {
    return detail::count_changes_at(
        db_.get(),
        "DELETE FROM letterbox_outbox INDEXED BY letterbox_outbox_published_at "
        "WHERE status = 1 AND published_at < ?1",
        older_than, ec);
}

LETTERBOX_DECL std::optional<outbox_record> outbox_store::find(const message_id& id,
                                                               std::error_code& ec) {
    ec.clear();
    if (!db_) {
        ec = errc::closed;
        return std::nullopt;
    }
    std::optional<outbox_record> found;
    const std::string key = letterbox::to_string(id);
    ec = db_->run([&](connection& c) -> std::error_code {
        found.reset();
        std::error_code e;
        auto st = detail::prepare_bound(c,
                                        "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS
                                        " FROM letterbox_outbox WHERE message_id = ?1",
                                        e, key);
        if (e)
            return e;
        if (!st->step(e))
            return e;
        outbox_record r;
        if (auto bad = detail::read_outbox_record(*st, r))
            return bad;
        found = std::move(r);
        return {};
    });
    if (ec)
        found.reset();
    return found;
}

LETTERBOX_DECL std::vector<outbox_record> outbox_store::list(const outbox_query& query,
                                                             std::error_code& ec) {
    return list_rows(query, nullptr, ec);
}

LETTERBOX_DECL std::vector<outbox_record>
outbox_store::list(const outbox_query& query, std::vector<outbox_row_error>& unreadable,
                   std::error_code& ec) {
    return list_rows(query, &unreadable, ec);
}

LETTERBOX_DECL std::vector<outbox_record>
outbox_store::list_rows(const outbox_query& query, std::vector<outbox_row_error>* unreadable,
                        std::error_code& ec) {
    ec.clear();
    if (unreadable)
        unreadable->clear();
    std::vector<outbox_record> rows;
    if (!db_) {
        ec = errc::closed;
        return rows;
    }
    if (query.limit == 0)
        return rows;
    // One SQL text per status, with the status as a literal: the status index then yields the
    // rows in sequence order, with no sort.
    const char* sql = "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS " FROM letterbox_outbox"
                      " WHERE sequence > ?1 ORDER BY sequence LIMIT ?2";
    if (query.status) {
        switch (*query.status) {
        case outbox_status::pending:
            sql = "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS
                  " FROM letterbox_outbox INDEXED BY letterbox_outbox_status"
                  " WHERE status = 0 AND sequence > ?1 ORDER BY sequence LIMIT ?2";
            break;
        case outbox_status::published:
            sql = "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS
                  " FROM letterbox_outbox INDEXED BY letterbox_outbox_status"
                  " WHERE status = 1 AND sequence > ?1 ORDER BY sequence LIMIT ?2";
            break;
        case outbox_status::parked:
            sql = "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS
                  " FROM letterbox_outbox INDEXED BY letterbox_outbox_status"
                  " WHERE status = 2 AND sequence > ?1 ORDER BY sequence LIMIT ?2";
            break;
        }
    }
    const auto after = static_cast<std::int64_t>(std::min<std::uint64_t>(
        query.after_sequence,
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
    ec = db_->run([&](connection& c) -> std::error_code {
        rows.clear();
        if (unreadable)
            unreadable->clear();
        std::error_code e;
        auto st = detail::prepare_bound(c, sql, e, after, detail::clamp_to_int64(query.limit));
        if (e)
            return e;
        return detail::read_outbox_records(*st, rows, unreadable);
    });
    if (ec) {
        rows.clear();
        if (unreadable)
            unreadable->clear();
    }
    return rows;
}

LETTERBOX_DECL outbox_stats outbox_store::stats(store_time now, std::error_code& ec) {
    ec.clear();
    outbox_stats s;
    if (!db_) {
        ec = errc::closed;
        return s;
    }
    const std::int64_t now_column = detail::to_column(now);
    ec = db_->run([&](connection& c) -> std::error_code {
        s = outbox_stats{};
        detail::read_transaction snapshot(c); // the three reads see one state
        if (auto e = snapshot.begin())
            return e;
        std::error_code e;
        {
            auto st = c.prepare("SELECT status, count(*) FROM letterbox_outbox "
                                "INDEXED BY letterbox_outbox_status GROUP BY status",
                                e);
            if (e)
                return e;
            while (st->step(e)) {
                const auto n = static_cast<std::size_t>(st->column_int64(1));
                switch (st->column_int64(0)) {
                case 0:
                    s.pending = n;
                    break;
                case 1:
                    s.published = n;
                    break;
                case 2:
                    s.parked = n;
                    break;
                default:
                    return errc::store_corrupt;
                }
            }
            if (e)
                return e;
        }
        if (s.pending == 0)
            return {};
        {
            auto st = detail::prepare_bound(c,
                                            "SELECT count(*) FROM letterbox_outbox INDEXED BY "
                                            "letterbox_outbox_claimable WHERE status = 0 AND "
                                            "aggregate_head = 1 AND lease_owner <> '' "
                                            "AND lease_expires_at > ?1",
                                            e, now_column);
            if (e)
                return e;
            if (!st->step(e))
                return e ? e : make_error_code(errc::store_error);
            s.leased = static_cast<std::size_t>(st->column_int64(0));
        }
        {
            auto st = c.prepare("SELECT min(created_at) FROM letterbox_outbox "
                                "INDEXED BY letterbox_outbox_pending_created_at WHERE status = 0",
                                e);
            if (e)
                return e;
            if (!st->step(e))
                return e ? e : make_error_code(errc::store_error);
            if (!st->column_is_null(0)) {
                const auto oldest = detail::from_column(st->column_int64(0));
                if (oldest < now)
                    s.oldest_pending_age = now - oldest;
            }
        }
        return {};
    });
    if (ec)
        s = outbox_stats{};
    return s;
}

} // namespace letterbox::sqlite

#undef LETTERBOX_SQLITE_OUTBOX_COLUMNS
