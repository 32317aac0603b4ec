// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/sqlite/outbox_store.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/detail/row_codec.hpp>
#include <letterbox/error.hpp>
#include <letterbox/outbox/detail/store_preconditions.hpp>
#include <letterbox/sqlite/detail/time.hpp>
#include <letterbox/sqlite/outbox_store.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

// The columns of an outbox_record, in the order detail::read_outbox_record reads them, from the
// event `o` and its delivery state: `u` (unpublished) or `p` (published), one of them NULL. An
// event with neither reads as status -1, which read_outbox_record reports as corrupt.
#define LETTERBOX_SQLITE_OUTBOX_COLUMNS                                                            \
    "o.sequence, o.message_id, o.aggregate_type, o.aggregate_id, o.event_type, o.exchange, "       \
    "o.routing_key, o.headers, o.properties, o.payload, o.created_at, "                            \
    "CASE WHEN u.sequence IS NOT NULL THEN u.status WHEN p.sequence IS NOT NULL THEN 1 "           \
    "ELSE -1 END, coalesce(u.attempts, p.attempts, 0), "                                           \
    "coalesce(u.next_attempt_at, p.next_attempt_at, 0), coalesce(u.last_error, p.last_error, "     \
    "''), "                                                                                        \
    "coalesce(u.last_failure_at, p.last_failure_at), coalesce(u.lease_owner, ''), "                \
    "coalesce(u.lease_expires_at, 0), p.published_at"

// The FROM clauses of those columns: every event, or driven by one delivery-state table (its
// rows in sequence order, each joined to its event: CROSS JOIN fixes the loop order).
#define LETTERBOX_SQLITE_FROM_OUTBOX                                                               \
    " FROM letterbox_outbox AS o"                                                                  \
    " LEFT JOIN letterbox_outbox_unpublished AS u ON u.sequence = o.sequence"                      \
    " LEFT JOIN letterbox_outbox_published AS p ON p.sequence = o.sequence"
#define LETTERBOX_SQLITE_FROM_UNPUBLISHED(hint)                                                    \
    " FROM letterbox_outbox_unpublished AS u " hint                                                \
    " CROSS JOIN letterbox_outbox AS o ON o.sequence = u.sequence"                                 \
    " LEFT JOIN letterbox_outbox_published AS p ON p.sequence = o.sequence"
#define LETTERBOX_SQLITE_FROM_PUBLISHED                                                            \
    " FROM letterbox_outbox_published AS p"                                                        \
    " CROSS JOIN letterbox_outbox AS o ON o.sequence = p.sequence"                                 \
    " LEFT JOIN letterbox_outbox_unpublished AS u ON u.sequence = o.sequence"

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

namespace detail {

/// Runs `sql` once on `c` with `args` bound to ?1, ?2, ... (see `prepare_bound`).
template <class... Args>
std::error_code execute_bound(connection& c, std::string_view sql, const Args&... args) {
    std::error_code ec;
    auto st = prepare_bound(c, sql, ec, args...);
    return ec ? ec : st->execute();
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
    auto headers = letterbox::detail::row_codec::decode_headers(st.column_blob(7));
    auto properties = letterbox::detail::row_codec::decode_properties(st.column_blob(8));
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
    if (auto invalid = letterbox::detail::check_outbox_entry(entry))
        return invalid;
    const auto headers = letterbox::detail::row_codec::encode_headers(entry.msg.headers);
    if (!headers)
        return errc::payload_unencodable; // nested deeper than detail::codec_max_depth

    auto& conn = uow.connection();
    std::error_code ec;
    {
        auto st = conn.prepare(
            "INSERT INTO letterbox_outbox (message_id, aggregate_type, aggregate_id, event_type, "
            "exchange, routing_key, headers, properties, payload, created_at) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            ec);
        if (!ec) {
            const auto& m = entry.msg;
            const std::string id = letterbox::to_string(m.id);
            const std::string properties =
                letterbox::detail::row_codec::encode_properties(m.properties);
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
    if (ec) {
        // The unique index on message_id is the arbiter of duplicates, staged in this unit or
        // committed: only the failed statement is undone, and the unit stays usable.
        if (ec == errc::store_error && conn.last_result_code() == SQLITE_CONSTRAINT_UNIQUE)
            return errc::duplicate_message_id;
        uow.fail(ec);
        return ec;
    }
    // The new row heads its aggregate when the aggregate has no lane (no unpublished row);
    // otherwise it is linked after the lane's tail, and becomes the tail.
    const std::int64_t sequence = conn.last_insert_rowid();
    const bool ordered = !entry.aggregate_id.empty();
    const auto execute = [&](std::string_view sql, const auto&... more) {
        return detail::execute_bound(conn, sql, sequence, entry.aggregate_type, entry.aggregate_id,
                                     more...);
    };
    ec = execute("INSERT INTO letterbox_outbox_unpublished (sequence, status, next_attempt_at, "
                 "created_at, aggregate_type, aggregate_id, aggregate_head) "
                 "VALUES (?1, 0, ?4, ?4, ?2, ?3, ?3 = '' OR NOT EXISTS (SELECT 1 FROM "
                 "letterbox_outbox_lane WHERE aggregate_type = ?2 AND aggregate_id = ?3))",
                 detail::to_column(now));
    if (!ec && ordered)
        ec = execute("UPDATE letterbox_outbox_unpublished SET next_sequence = ?1 "
                     "WHERE sequence = (SELECT tail FROM letterbox_outbox_lane "
                     "WHERE aggregate_type = ?2 AND aggregate_id = ?3)");
    if (!ec && ordered)
        ec = execute("INSERT INTO letterbox_outbox_lane (aggregate_type, aggregate_id, tail) "
                     "VALUES (?2, ?3, ?1) ON CONFLICT (aggregate_type, aggregate_id) "
                     "DO UPDATE SET tail = excluded.tail");
    if (ec)
        uow.fail(ec); // the event row is staged without its state: the unit must not commit
    return ec;
}

namespace detail {

/// `[a,b,...]`: a JSON array of the sequences, for `json_each` (one statement for a set).
LETTERBOX_DECL std::string json_array(const std::vector<std::int64_t>& values) {
    std::string text = "[";
    for (const auto v : values) {
        if (text.size() > 1)
            text += ',';
        text += std::to_string(v);
    }
    text += ']';
    return text;
}

} // namespace detail

LETTERBOX_DECL std::vector<outbox_record> outbox_store::claim(std::string_view owner,
                                                              std::size_t max_rows,
                                                              store_time::duration lease,
                                                              store_time now, std::error_code& ec) {
    std::vector<outbox_record> batch;
    if ((ec = letterbox::detail::check_claim(db_ != nullptr, owner)) || max_rows == 0)
        return batch;
    const std::int64_t now_column = detail::to_column(now);
    const std::int64_t expires_column = detail::to_column(now + lease);

    ec = db_->run([&](connection& c) -> std::error_code {
        batch.clear();
        detail::write_transaction tx(c);
        if (auto e = tx.begin())
            return e;
        std::error_code e;
        std::vector<std::int64_t> leased;
        {
            // One statement leases the batch. Only the heads of their aggregates are in the
            // claimable index, so rows queued behind an unpublished row are never read, and
            // the scan in sequence order stops after `max_rows` hits.
            auto update = detail::prepare_bound(
                c,
                "UPDATE letterbox_outbox_unpublished SET lease_owner = ?3, lease_expires_at = ?4 "
                "WHERE sequence IN (SELECT u.sequence FROM letterbox_outbox_unpublished AS u "
                "INDEXED BY letterbox_outbox_claimable"
                " WHERE u.status = 0 AND u.aggregate_head = 1 AND u.next_attempt_at <= ?1"
                " AND (u.lease_owner = '' OR u.lease_expires_at <= ?1)"
                " ORDER BY u.sequence LIMIT ?2) RETURNING sequence",
                e, now_column, detail::clamp_to_int64(max_rows), owner, expires_column);
            if (e)
                return e;
            while (update->step(e))
                leased.push_back(update->column_int64(0));
            if (e)
                return e;
        }
        if (leased.empty())
            return tx.commit();
        {
            auto select = detail::prepare_bound(
                c,
                "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS LETTERBOX_SQLITE_FROM_UNPUBLISHED(
                    "NOT INDEXED") " WHERE u.sequence IN (SELECT value FROM json_each(?1))"
                                   " ORDER BY u.sequence",
                e, detail::json_array(leased));
            if (e)
                return e;
            if (auto read = detail::read_outbox_records(*select, batch))
                return read;
        }
        if (batch.size() != leased.size())
            return errc::store_corrupt; // a leased state row without its event
        return tx.commit();
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
        // (the statement is reset before classify_miss runs on the connection)
        if (auto e = detail::execute_bound(c, sql, key, args...))
            return e;
        if (c.changes() == 1)
            return {};
        return classify_miss(c, key, otherwise);
    });
}

LETTERBOX_DECL std::error_code
outbox_store::mark_published(const message_id& id, std::string_view owner, store_time now) {
    std::vector<std::error_code> results;
    if (auto ec = mark_published(std::span<const message_id>(&id, 1), owner, now, results))
        return ec;
    return results.front();
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
    std::string keys = "[";
    for (const auto& id : ids) {
        if (keys.size() > 1)
            keys += ',';
        keys += '"' + letterbox::to_string(id) + '"'; // hex digits and dashes: no escaping
    }
    keys += ']';
    const auto ec = db_->run([&](connection& c) -> std::error_code {
        results.assign(ids.size(), make_error_code(errc::record_not_found));
        detail::write_transaction tx(c);
        if (auto e = tx.begin())
            return e;
        std::error_code e;
        // Which ids this owner may mark: one read of the whole batch, in the transaction.
        std::vector<std::int64_t> marked;
        std::unordered_set<std::int64_t> seen;
        {
            auto st = detail::prepare_bound(
                c,
                "SELECT j.key, o.sequence, u.status = 0 AND u.lease_owner = ?2 AND ?2 <> '' "
                "FROM json_each(?1) AS j "
                "LEFT JOIN letterbox_outbox AS o ON o.message_id = j.value "
                "LEFT JOIN letterbox_outbox_unpublished AS u ON u.sequence = o.sequence",
                e, keys, owner);
            if (e)
                return e;
            while (st->step(e)) {
                const auto index = static_cast<std::size_t>(st->column_int64(0));
                if (index >= results.size() || st->column_is_null(1))
                    continue; // unknown id: record_not_found
                const auto sequence = st->column_int64(1);
                // A repeated id is lost the second time, as if marked one by one.
                const bool repeated = !seen.insert(sequence).second;
                if (st->column_int64(2) == 1 && !repeated) {
                    results[index] = {};
                    marked.push_back(sequence);
                } else {
                    results[index] = make_error_code(errc::lease_lost);
                }
            }
            if (e)
                return e;
        }
        if (marked.empty())
            return tx.commit();
        const std::string sequences = detail::json_array(marked);
        // Set-based, each row a head: the next row of its aggregate becomes the head, a lane
        // that ends with it ends, and its state moves to the published table.
        const auto execute = [&](std::string_view sql, const auto&... more) {
            return detail::execute_bound(c, sql, sequences, more...);
        };
        for (const char* sql :
             {"UPDATE letterbox_outbox_unpublished SET aggregate_head = 1 WHERE sequence IN ("
              "SELECT next_sequence FROM letterbox_outbox_unpublished "
              "WHERE sequence IN (SELECT value FROM json_each(?1)))",
              "DELETE FROM letterbox_outbox_lane WHERE (aggregate_type, aggregate_id, tail) IN ("
              "SELECT aggregate_type, aggregate_id, sequence FROM letterbox_outbox_unpublished "
              "WHERE sequence IN (SELECT value FROM json_each(?1)) AND next_sequence IS NULL "
              "AND aggregate_id <> '')"})
            if (auto x = execute(sql))
                return x;
        if (auto x = execute("INSERT INTO letterbox_outbox_published (sequence, published_at, "
                             "attempts, next_attempt_at, last_error, last_failure_at) "
                             "SELECT sequence, ?2, attempts, next_attempt_at, last_error, "
                             "last_failure_at FROM letterbox_outbox_unpublished "
                             "WHERE sequence IN (SELECT value FROM json_each(?1))",
                             detail::to_column(now)))
            return x;
        if (auto x = execute("DELETE FROM letterbox_outbox_unpublished "
                             "WHERE sequence IN (SELECT value FROM json_each(?1))"))
            return x;
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
    // The right-hand sides see the row before the update: attempts + 1 is the new count. A
    // parked row stays unpublished: it keeps blocking its aggregate.
    return update_row(
        id, errc::lease_lost,
        "UPDATE letterbox_outbox_unpublished SET attempts = attempts + 1, last_error = ?3, "
        "last_failure_at = ?4, lease_owner = '', lease_expires_at = 0, "
        "next_attempt_at = ?5, status = CASE WHEN attempts + 1 >= ?6 THEN 2 ELSE 0 END "
        "WHERE sequence = (SELECT sequence FROM letterbox_outbox WHERE message_id = ?1) "
        "AND status = 0 AND lease_owner = ?2 AND lease_owner <> ''",
        owner, error, detail::to_column(now), detail::to_column(next_attempt_at),
        static_cast<std::int64_t>(max_attempts));
}

LETTERBOX_DECL std::error_code outbox_store::park(const message_id& id, std::string_view reason) {
    return update_row(id, errc::invalid_state,
                      "UPDATE letterbox_outbox_unpublished SET status = 2, last_error = ?2, "
                      "lease_owner = '', lease_expires_at = 0 "
                      "WHERE sequence = (SELECT sequence FROM letterbox_outbox "
                      "WHERE message_id = ?1)",
                      reason);
}

LETTERBOX_DECL std::error_code outbox_store::unpark(const message_id& id, store_time now) {
    return update_row(id, errc::invalid_state,
                      "UPDATE letterbox_outbox_unpublished SET status = 0, attempts = 0, "
                      "next_attempt_at = ?2 WHERE sequence = (SELECT sequence FROM "
                      "letterbox_outbox WHERE message_id = ?1) AND status = 2",
                      detail::to_column(now));
}

LETTERBOX_DECL std::size_t outbox_store::release_expired_leases(store_time now,
                                                                std::error_code& ec) {
    // Only claim sets leases, and only on pending heads; settling and parking drop them, and a
    // head stays the head until it is published. So the claimable index holds every lease.
    return detail::count_changes_at(
        db_.get(),
        "UPDATE letterbox_outbox_unpublished INDEXED BY letterbox_outbox_claimable "
        "SET lease_owner = '', lease_expires_at = 0 WHERE status = 0 AND aggregate_head = 1 "
        "AND lease_owner <> '' AND lease_expires_at <= ?1",
        now, ec);
}

LETTERBOX_DECL std::size_t outbox_store::purge_published(store_time older_than,
                                                         std::error_code& ec) {
    // The trigger letterbox_outbox_published_deleted removes the published rows with them.
    return detail::count_changes_at(
        db_.get(),
        "DELETE FROM letterbox_outbox WHERE sequence IN (SELECT sequence FROM "
        "letterbox_outbox_published INDEXED BY letterbox_outbox_published_at "
        "WHERE published_at < ?1)",
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
        auto st = detail::prepare_bound(
            c,
            "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS LETTERBOX_SQLITE_FROM_OUTBOX
            " WHERE o.message_id = ?1",
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
    // One SQL text per status, each driven by the table that holds that status, in sequence
    // order with no sort.
    const char* sql = "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS LETTERBOX_SQLITE_FROM_OUTBOX
                      " WHERE o.sequence > ?1 ORDER BY o.sequence LIMIT ?2";
    if (query.status) {
        switch (*query.status) {
        case outbox_status::pending:
            sql = "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS LETTERBOX_SQLITE_FROM_UNPUBLISHED(
                "NOT INDEXED") " WHERE u.status = 0 AND u.sequence > ?1"
                               " ORDER BY u.sequence LIMIT ?2";
            break;
        case outbox_status::published:
            sql = "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS LETTERBOX_SQLITE_FROM_PUBLISHED
                  " WHERE p.sequence > ?1 ORDER BY p.sequence LIMIT ?2";
            break;
        case outbox_status::parked:
            sql = "SELECT " LETTERBOX_SQLITE_OUTBOX_COLUMNS LETTERBOX_SQLITE_FROM_UNPUBLISHED(
                "INDEXED BY letterbox_outbox_parked") " WHERE u.status = 2 AND u.sequence > ?1"
                                                      " ORDER BY u.sequence LIMIT ?2";
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
            auto st = c.prepare("SELECT status, count(*) FROM letterbox_outbox_unpublished "
                                "GROUP BY status UNION ALL "
                                "SELECT 1, count(*) FROM letterbox_outbox_published",
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
            auto st =
                detail::prepare_bound(c,
                                      "SELECT count(*) FROM letterbox_outbox_unpublished "
                                      "INDEXED BY letterbox_outbox_claimable WHERE status = 0 AND "
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
            // A scan of the unpublished rows (the backlog), which keeps an index off the hot path.
            auto st = c.prepare(
                "SELECT min(created_at) FROM letterbox_outbox_unpublished WHERE status = 0", e);
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
#undef LETTERBOX_SQLITE_FROM_OUTBOX
#undef LETTERBOX_SQLITE_FROM_UNPUBLISHED
#undef LETTERBOX_SQLITE_FROM_PUBLISHED
