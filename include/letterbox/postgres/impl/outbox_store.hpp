// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/postgres/outbox_store.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/detail/row_codec.hpp>
#include <letterbox/detail/time_column.hpp>
#include <letterbox/error.hpp>
#include <letterbox/outbox/detail/store_preconditions.hpp>
#include <letterbox/postgres/impl/schema.hpp>
#include <letterbox/postgres/outbox_store.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

// The columns every read returns, in the order detail::read_outbox_row reads them.
#define LETTERBOX_POSTGRES_OUTBOX_COLUMNS                                                          \
    "o.sequence, o.message_id, o.aggregate_type, o.aggregate_id, o.event_type, o.exchange, "       \
    "o.routing_key, o.headers, o.properties, o.payload, o.created_at, o.status, o.attempts, "      \
    "o.next_attempt_at, o.last_error, o.last_failure_at, o.lease_owner, o.lease_expires_at, "      \
    "o.published_at"

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// The store's SQL, with its schema's name in place.
struct outbox_store::statements {
    statements(const std::string& schema, const std::string& name, const outbox_options& options)
        : insert(insert_sql(schema, name, options.notify, false))
        , insert_ordered(insert_sql(schema, name, options.notify, true))
        , claim(with(schema,
                     "WITH c AS (SELECT o.sequence FROM {schema}.letterbox_outbox AS o "
                     "WHERE o.status = 0 AND o.next_attempt_at <= $1 "
                     "AND (o.lease_owner = '' OR o.lease_expires_at <= $1) "
                     "AND (o.aggregate_id = '' OR NOT EXISTS (SELECT 1 FROM "
                     "{schema}.letterbox_outbox AS e WHERE e.aggregate_type = o.aggregate_type "
                     "AND e.aggregate_id = o.aggregate_id AND e.status <> 1 "
                     "AND e.sequence < o.sequence)) "
                     "ORDER BY o.sequence LIMIT $2 FOR UPDATE OF o SKIP LOCKED) "
                     "UPDATE {schema}.letterbox_outbox AS o SET lease_owner = $3, "
                     "lease_expires_at = $4 FROM c WHERE o.sequence = c.sequence "
                     "RETURNING " LETTERBOX_POSTGRES_OUTBOX_COLUMNS))
        , mark(with(schema, "UPDATE {schema}.letterbox_outbox SET status = 1, published_at = $3, "
                            "lease_owner = '', lease_expires_at = 0 WHERE message_id = $1 "
                            "AND status = 0 AND lease_owner = $2 AND lease_owner <> ''"))
        , mark_many(with(
              schema, "UPDATE {schema}.letterbox_outbox SET status = 1, published_at = $3, "
                      "lease_owner = '', lease_expires_at = 0 WHERE message_id = ANY($1::uuid[]) "
                      "AND status = 0 AND lease_owner = $2 AND lease_owner <> '' "
                      "RETURNING message_id"))
        , existing(with(schema, "SELECT message_id FROM {schema}.letterbox_outbox "
                                "WHERE message_id = ANY($1::uuid[])"))
        , exists(with(schema, "SELECT 1 FROM {schema}.letterbox_outbox WHERE message_id = $1"))
        // The right-hand sides see the row before the update: attempts + 1 is the new count.
        , fail(with(schema, "UPDATE {schema}.letterbox_outbox SET attempts = attempts + 1, "
                            "last_error = $3, last_failure_at = $4, lease_owner = '', "
                            "lease_expires_at = 0, next_attempt_at = $5, "
                            "status = CASE WHEN attempts + 1 >= $6 THEN 2 ELSE 0 END "
                            "WHERE message_id = $1 AND status = 0 AND lease_owner = $2 "
                            "AND lease_owner <> ''"))
        , park(with(schema, "UPDATE {schema}.letterbox_outbox SET status = 2, last_error = $2, "
                            "lease_owner = '', lease_expires_at = 0 "
                            "WHERE message_id = $1 AND status <> 1"))
        , unpark(with(schema, "UPDATE {schema}.letterbox_outbox SET status = 0, attempts = 0, "
                              "next_attempt_at = $2 WHERE message_id = $1 AND status = 2"))
        , release(with(schema, "UPDATE {schema}.letterbox_outbox SET lease_owner = '', "
                               "lease_expires_at = 0 WHERE status = 0 AND lease_owner <> '' "
                               "AND lease_expires_at <= $1"))
        , purge(with(schema, "DELETE FROM {schema}.letterbox_outbox "
                             "WHERE status = 1 AND published_at < $1"))
        , find(with(schema, "SELECT " LETTERBOX_POSTGRES_OUTBOX_COLUMNS
                            " FROM {schema}.letterbox_outbox AS o WHERE o.message_id = $1"))
        , list(with(schema, "SELECT " LETTERBOX_POSTGRES_OUTBOX_COLUMNS
                            " FROM {schema}.letterbox_outbox AS o WHERE o.sequence > $1 "
                            "ORDER BY o.sequence LIMIT $2"))
        , list_status(with(schema, "SELECT " LETTERBOX_POSTGRES_OUTBOX_COLUMNS
                                   " FROM {schema}.letterbox_outbox AS o WHERE o.sequence > $1 "
                                   "AND o.status = $3 ORDER BY o.sequence LIMIT $2"))
        , stats(with(schema,
                     "SELECT count(*) FILTER (WHERE status = 0), "
                     "count(*) FILTER (WHERE status = 0 AND lease_owner <> '' "
                     "AND lease_expires_at > $1), "
                     "count(*) FILTER (WHERE status = 2), count(*) FILTER (WHERE status = 1), "
                     "min(created_at) FILTER (WHERE status = 0) "
                     "FROM {schema}.letterbox_outbox")) {}

    static std::string with(const std::string& schema, std::string_view sql) {
        return detail::with_schema(sql, schema);
    }

    /// One statement per add: the announcement (delivered at commit) and, for a row of an
    /// aggregate, the aggregate's order lock, taken before the identity gives the row its
    /// sequence (the CTEs run first: the INSERT reads their row), then the row.
    static std::string insert_sql(const std::string& schema, const std::string& name, bool notify,
                                  bool ordered) {
        std::string ctes;
        std::string from;
        const auto add = [&](std::string cte, std::string_view alias) {
            ctes += ctes.empty() ? "WITH " : ", ";
            ctes += cte;
            from += from.empty() ? " FROM " : ", ";
            from += alias;
        };
        if (notify)
            add("n AS (SELECT pg_notify('" + std::string(outbox_options::channel) + "', '" + name +
                    "'))",
                "n");
        if (ordered)
            add(with(schema, "l AS (SELECT pg_advisory_xact_lock(hashtext('{schema}.outbox'), "
                             "hashtext($2 || chr(31) || $3)))"),
                "l");
        return ctes +
               with(schema, " INSERT INTO {schema}.letterbox_outbox (message_id, "
                            "aggregate_type, aggregate_id, event_type, exchange, "
                            "routing_key, headers, properties, payload, created_at, "
                            "next_attempt_at) SELECT $1::uuid, $2::text, $3::text, "
                            "$4::text, $5::text, $6::text, $7::bytea, $8::bytea, "
                            "$9::bytea, $10::bigint, $10::bigint") +
               from + " ON CONFLICT (message_id) DO NOTHING";
    }

    std::string insert, insert_ordered, claim, mark, mark_many, existing, exists, fail, park,
        unpark, release, purge, find, list, list_status, stats;
};

namespace detail {

LETTERBOX_DECL std::int64_t clamp_to_int64(std::uint64_t n) noexcept {
    return static_cast<std::int64_t>(std::min<std::uint64_t>(
        n, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
}

/// `{id,id,...}`: a uuid[] literal (ids are hex and dashes: nothing to escape).
LETTERBOX_DECL std::string uuid_array(std::span<const message_id> ids) {
    std::string text = "{";
    for (const auto& id : ids) {
        if (text.size() > 1)
            text += ',';
        text += letterbox::to_string(id);
    }
    text += '}';
    return text;
}

/// Reads row `i` of a result of `LETTERBOX_POSTGRES_OUTBOX_COLUMNS`. A value letterbox cannot
/// have written is `errc::store_corrupt`.
LETTERBOX_DECL std::error_code read_outbox_row(const result& r, std::size_t i, outbox_record& out) {
    using letterbox::detail::from_column;
    const auto id = parse_message_id(r.text(i, 1));
    const auto headers_bytes = r.bytes(i, 7);
    const auto properties_bytes = r.bytes(i, 8);
    auto body = r.bytes(i, 9);
    const auto sequence = r.int64(i, 0);
    const auto created = r.int64(i, 10);
    const auto status = r.int64(i, 11);
    const auto attempts = r.int64(i, 12);
    const auto next = r.int64(i, 13);
    const auto expires = r.int64(i, 17);
    if (!id || !headers_bytes || !properties_bytes || !body || !sequence || !created || !status ||
        !attempts || !next || !expires || *status < 0 || *status > 2 || *attempts < 0 ||
        *attempts > std::numeric_limits<std::uint32_t>::max())
        return errc::store_corrupt;
    auto headers = letterbox::detail::row_codec::decode_headers(*headers_bytes);
    auto properties = letterbox::detail::row_codec::decode_properties(*properties_bytes);
    if (!headers || !properties)
        return errc::store_corrupt;
    out.sequence = static_cast<std::uint64_t>(*sequence);
    out.msg.id = *id;
    out.aggregate_type = std::string(r.text(i, 2));
    out.aggregate_id = std::string(r.text(i, 3));
    out.msg.type = std::string(r.text(i, 4));
    out.msg.exchange = std::string(r.text(i, 5));
    out.msg.routing_key = std::string(r.text(i, 6));
    out.msg.headers = std::move(*headers);
    out.msg.properties = std::move(*properties);
    out.msg.body = std::move(*body);
    out.created_at = from_column(*created);
    out.status = *status == 0 ? outbox_status::pending
                              : (*status == 1 ? outbox_status::published : outbox_status::parked);
    out.attempts = static_cast<std::uint32_t>(*attempts);
    out.next_attempt_at = from_column(*next);
    out.last_error = std::string(r.text(i, 14));
    const auto failed_at = r.int64(i, 15);
    out.last_failure_at =
        failed_at ? std::optional<store_time>(from_column(*failed_at)) : std::nullopt;
    out.lease_owner = std::string(r.text(i, 16));
    out.lease_expires_at = from_column(*expires);
    const auto published = r.int64(i, 18);
    out.published_at =
        published ? std::optional<store_time>(from_column(*published)) : std::nullopt;
    return {};
}

/// Every row of `r`, in sequence order.
LETTERBOX_DECL std::error_code read_outbox_rows(const result& r, std::vector<outbox_record>& rows) {
    rows.clear();
    rows.reserve(r.rows());
    for (std::size_t i = 0; i < r.rows(); ++i) {
        outbox_record row;
        if (auto bad = read_outbox_row(r, i, row))
            return bad;
        rows.push_back(std::move(row));
    }
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
    return {};
}

} // namespace detail

LETTERBOX_DECL outbox_store::outbox_store(const database& db, outbox_options options)
    : db_(db.state())
    , sql_(db.state() ? std::make_shared<const statements>(db.state()->schema(),
                                                           db.state()->schema_name(), options)
                      : nullptr) {}

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
        return errc::payload_unencodable; // nested deeper than the codec allows
    const std::string properties =
        letterbox::detail::row_codec::encode_properties(entry.msg.properties);
    const std::string id = letterbox::to_string(entry.msg.id);
    const auto& m = entry.msg;
    auto& conn = uow.connection();
    std::error_code ec;
    auto inserted =
        conn.exec(entry.aggregate_id.empty() ? sql_->insert : sql_->insert_ordered,
                  {param::text(id), param::text(entry.aggregate_type),
                   param::text(entry.aggregate_id), param::text(m.type), param::text(m.exchange),
                   param::text(m.routing_key), param::bytes(*headers), param::bytes(properties),
                   param::bytes(m.body), param(letterbox::detail::to_column(now))},
                  ec);
    if (ec) {
        uow.fail(ec);
        return ec;
    }
    return inserted.affected() == 1 ? std::error_code{}
                                    : make_error_code(errc::duplicate_message_id);
}

LETTERBOX_DECL std::vector<outbox_record> outbox_store::claim(std::string_view owner,
                                                              std::size_t max_rows,
                                                              store_time::duration lease,
                                                              store_time now, std::error_code& ec) {
    std::vector<outbox_record> batch;
    if ((ec = letterbox::detail::check_claim(db_ != nullptr, owner)) || max_rows == 0)
        return batch;
    const std::string owner_text(owner);
    ec = db_->run([&](connection& c) {
        std::error_code e;
        auto r = c.exec(sql_->claim,
                        {param(letterbox::detail::to_column(now)),
                         param(detail::clamp_to_int64(max_rows)), param::text(owner_text),
                         param(letterbox::detail::to_column(now + lease))},
                        e);
        return e ? e : detail::read_outbox_rows(r, batch);
    });
    if (ec)
        batch.clear();
    return batch;
}

LETTERBOX_DECL std::error_code outbox_store::update_row(const message_id& id, errc otherwise,
                                                        const std::string& sql,
                                                        std::initializer_list<param> args) {
    if (!db_)
        return errc::closed;
    const std::string key = letterbox::to_string(id);
    std::vector<param> params{param::text(key)};
    params.insert(params.end(), args.begin(), args.end());
    return db_->run([&](connection& c) -> std::error_code {
        std::error_code e;
        auto changed = c.exec(sql, params, e);
        if (e)
            return e;
        if (changed.affected() > 0)
            return {};
        auto found = c.exec(sql_->exists, {param::text(key)}, e);
        if (e)
            return e;
        return found.rows() > 0 ? make_error_code(otherwise)
                                : make_error_code(errc::record_not_found);
    });
}

LETTERBOX_DECL std::error_code
outbox_store::mark_published(const message_id& id, std::string_view owner, store_time now) {
    return update_row(id, errc::lease_lost, sql_->mark,
                      {param::text(owner), param(letterbox::detail::to_column(now))});
}

LETTERBOX_DECL std::error_code outbox_store::mark_published(std::span<const message_id> ids,
                                                            std::string_view owner, store_time now,
                                                            std::vector<std::error_code>& results) {
    results.assign(ids.size(), std::error_code{});
    if (!db_) {
        results.assign(ids.size(), make_error_code(errc::closed));
        return errc::closed;
    }
    if (ids.empty())
        return {};
    const std::string array = detail::uuid_array(ids);
    const std::string owner_text(owner);
    const auto ec = db_->run([&](connection& c) -> std::error_code {
        if (auto e = c.exec("BEGIN"))
            return e;
        const auto fail = [&c](std::error_code e) {
            (void)c.exec("ROLLBACK");
            return e;
        };
        std::error_code e;
        auto marked = c.exec(
            sql_->mark_many,
            {param::text(array), param::text(owner_text), param(letterbox::detail::to_column(now))},
            e);
        if (e)
            return fail(e);
        std::unordered_set<std::string> done;
        for (std::size_t i = 0; i < marked.rows(); ++i)
            done.emplace(marked.text(i, 0));
        if (done.size() < ids.size()) {
            // What the single calls would have said of the others: a row that exists was not
            // this owner's to mark (or an earlier occurrence of its id marked it).
            auto known = c.exec(sql_->existing, {param::text(array)}, e);
            if (e)
                return fail(e);
            std::unordered_set<std::string> exists;
            for (std::size_t i = 0; i < known.rows(); ++i)
                exists.emplace(known.text(i, 0));
            for (std::size_t i = 0; i < ids.size(); ++i) {
                const std::string key = letterbox::to_string(ids[i]);
                if (done.erase(key) > 0)
                    continue; // the first occurrence of a marked id
                results[i] = exists.count(key) > 0 ? make_error_code(errc::lease_lost)
                                                   : make_error_code(errc::record_not_found);
            }
        }
        return c.exec("COMMIT");
    });
    if (ec)
        results.assign(ids.size(), ec);
    return ec;
}

LETTERBOX_DECL std::error_code
outbox_store::record_failure(const message_id& id, std::string_view owner, std::string_view error,
                             store_time next_attempt_at, std::uint32_t max_attempts,
                             store_time now) {
    return update_row(id, errc::lease_lost, sql_->fail,
                      {param::text(owner), param::text(error),
                       param(letterbox::detail::to_column(now)),
                       param(letterbox::detail::to_column(next_attempt_at)),
                       param(static_cast<std::int64_t>(max_attempts))});
}

LETTERBOX_DECL std::error_code outbox_store::park(const message_id& id, std::string_view reason) {
    return update_row(id, errc::invalid_state, sql_->park, {param::text(reason)});
}

LETTERBOX_DECL std::error_code outbox_store::unpark(const message_id& id, store_time now) {
    return update_row(id, errc::invalid_state, sql_->unpark,
                      {param(letterbox::detail::to_column(now))});
}

LETTERBOX_DECL std::size_t outbox_store::count_changes(const std::string& sql, store_time at,
                                                       std::error_code& ec) {
    ec.clear();
    if (!db_) {
        ec = errc::closed;
        return 0;
    }
    std::size_t n = 0;
    ec = db_->run([&](connection& c) {
        std::error_code e;
        n = c.exec(sql, {param(letterbox::detail::to_column(at))}, e).affected();
        return e;
    });
    return ec ? 0 : n;
}

LETTERBOX_DECL std::size_t outbox_store::release_expired_leases(store_time now,
                                                                std::error_code& ec) {
    return count_changes(sql_->release, now, ec);
}

LETTERBOX_DECL std::size_t outbox_store::purge_published(store_time older_than,
                                                         std::error_code& ec) {
    return count_changes(sql_->purge, older_than, ec);
}

LETTERBOX_DECL std::optional<outbox_record> outbox_store::find(const message_id& id,
                                                               std::error_code& ec) {
    ec.clear();
    if (!db_) {
        ec = errc::closed;
        return std::nullopt;
    }
    std::vector<outbox_record> rows;
    const std::string key = letterbox::to_string(id);
    ec = db_->run([&](connection& c) {
        std::error_code e;
        auto r = c.exec(sql_->find, {param::text(key)}, e);
        return e ? e : detail::read_outbox_rows(r, rows);
    });
    if (ec || rows.empty())
        return std::nullopt;
    return std::move(rows.front());
}

LETTERBOX_DECL std::vector<outbox_record> outbox_store::list(const outbox_query& query,
                                                             std::error_code& ec) {
    ec.clear();
    std::vector<outbox_record> rows;
    if (!db_) {
        ec = errc::closed;
        return rows;
    }
    if (query.limit == 0)
        return rows;
    const param after(detail::clamp_to_int64(query.after_sequence));
    const param limit(detail::clamp_to_int64(query.limit));
    ec = db_->run([&](connection& c) {
        std::error_code e;
        auto r = query.status
                     ? c.exec(sql_->list_status,
                              {after, limit, param(static_cast<std::int64_t>(*query.status))}, e)
                     : c.exec(sql_->list, {after, limit}, e);
        return e ? e : detail::read_outbox_rows(r, rows);
    });
    if (ec)
        rows.clear();
    return rows;
}

LETTERBOX_DECL outbox_stats outbox_store::stats(store_time now, std::error_code& ec) {
    ec.clear();
    outbox_stats s;
    if (!db_) {
        ec = errc::closed;
        return s;
    }
    ec = db_->run([&](connection& c) -> std::error_code {
        std::error_code e;
        auto r = c.exec(sql_->stats, {param(letterbox::detail::to_column(now))}, e);
        if (e)
            return e;
        if (r.rows() != 1)
            return errc::store_error;
        const auto count = [&r](int column) {
            return static_cast<std::size_t>(
                std::max<std::int64_t>(0, r.int64(0, column).value_or(0)));
        };
        s.pending = count(0);
        s.leased = count(1);
        s.parked = count(2);
        s.published = count(3);
        if (const auto oldest = r.int64(0, 4)) {
            const auto at = letterbox::detail::from_column(*oldest);
            if (at < now)
                s.oldest_pending_age = now - at;
        }
        return {};
    });
    if (ec)
        s = outbox_stats{};
    return s;
}

} // namespace letterbox::postgres

#undef LETTERBOX_POSTGRES_OUTBOX_COLUMNS
