// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/postgres/schema.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/postgres/schema.hpp>

#include <array>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

namespace detail {

inline constexpr std::array<schema::migration, 1> migration_steps{{
    {1, "outbox and inbox",
     // The outbox keeps every event with its delivery state. The order of an aggregate is kept
     // at claim time (no earlier unpublished row of the same aggregate) and at add time (a
     // transaction advisory lock per aggregate, so sequences of one aggregate follow commit
     // order: docs/design/postgres.md).
     R"sql(
CREATE TABLE {schema}.letterbox_outbox (
    sequence         bigint   GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id       uuid     NOT NULL UNIQUE,
    aggregate_type   text     NOT NULL,
    aggregate_id     text     NOT NULL,
    event_type       text     NOT NULL,
    exchange         text     NOT NULL,
    routing_key      text     NOT NULL,
    headers          bytea    NOT NULL,
    properties       bytea    NOT NULL,
    payload          bytea    NOT NULL,
    created_at       bigint   NOT NULL,
    status           smallint NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)),
    attempts         integer  NOT NULL DEFAULT 0,
    next_attempt_at  bigint   NOT NULL,
    last_error       text     NOT NULL DEFAULT '',
    last_failure_at  bigint,
    lease_owner      text     NOT NULL DEFAULT '',
    lease_expires_at bigint   NOT NULL DEFAULT 0,
    published_at     bigint
);
-- claim: the pending rows in sequence order.
CREATE INDEX letterbox_outbox_pending ON {schema}.letterbox_outbox (sequence) WHERE status = 0;
-- claim's order check: is an earlier row of the same aggregate still unpublished?
CREATE INDEX letterbox_outbox_unpublished_by_aggregate
    ON {schema}.letterbox_outbox (aggregate_type, aggregate_id, sequence) WHERE status <> 1;
CREATE INDEX letterbox_outbox_parked ON {schema}.letterbox_outbox (sequence) WHERE status = 2;
CREATE INDEX letterbox_outbox_published_at
    ON {schema}.letterbox_outbox (published_at) WHERE status = 1;

CREATE TABLE {schema}.letterbox_inbox (
    consumer_id text   NOT NULL,
    message_id  uuid   NOT NULL,
    recorded_at bigint NOT NULL,
    PRIMARY KEY (consumer_id, message_id)
);
CREATE INDEX letterbox_inbox_recorded_at ON {schema}.letterbox_inbox (recorded_at);
)sql"},
}};

/// `sql` with every `{schema}` replaced by `quoted`.
inline std::string with_schema(std::string_view sql, std::string_view quoted) {
    constexpr std::string_view marker = "{schema}";
    std::string out;
    out.reserve(sql.size() + 16 * quoted.size());
    for (std::size_t at = 0;;) {
        const auto next = sql.find(marker, at);
        if (next == std::string_view::npos) {
            out.append(sql.substr(at));
            return out;
        }
        out.append(sql.substr(at, next - at));
        out.append(quoted);
        at = next + marker.size();
    }
}

/// `"name"`: a name `schema::valid_name` accepted needs no escaping inside the quotes.
inline std::string quoted_schema(std::string_view name) {
    return '"' + std::string(name) + '"';
}

} // namespace detail

LETTERBOX_DECL std::span<const schema::migration> schema::migrations() noexcept {
    return detail::migration_steps;
}

LETTERBOX_DECL bool schema::valid_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 63)
        return false;
    if (!((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
        return false;
    for (const char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    return true;
}

LETTERBOX_DECL int schema::installed_version(connection& conn, std::string_view name,
                                             std::error_code& ec) {
    ec.clear();
    if (!valid_name(name)) {
        ec = errc::invalid_argument;
        return 0;
    }
    const std::string table = std::string(name) + ".letterbox_schema_version";
    auto exists = conn.exec("SELECT to_regclass($1) IS NOT NULL", {param::text(table)}, ec);
    if (ec)
        return 0;
    if (exists.text(0, 0) != "t")
        return 0;
    auto row =
        conn.exec(detail::with_schema("SELECT version FROM {schema}.letterbox_schema_version "
                                      "WHERE component = $1",
                                      detail::quoted_schema(name)),
                  {param::text(component)}, ec);
    if (ec || row.rows() == 0)
        return 0;
    const auto v = row.int64(0, 0);
    if (!v) {
        ec = errc::store_corrupt;
        return 0;
    }
    return static_cast<int>(*v);
}

LETTERBOX_DECL std::error_code schema::migrate(connection& conn, std::string_view name,
                                               bool create_if_missing) {
    if (!valid_name(name))
        return errc::invalid_argument;
    std::error_code ec;
    const int before = installed_version(conn, name, ec);
    if (ec)
        return ec;
    if (before == latest_version())
        return {};
    if (before > latest_version())
        return errc::store_schema_too_new;
    if (before == 0 && !create_if_missing)
        return errc::store_not_a_database;

    const std::string quoted = detail::quoted_schema(name);
    if (auto e = conn.exec("BEGIN"))
        return e;
    const auto fail = [&conn](std::error_code e) {
        (void)conn.exec("ROLLBACK");
        return e;
    };
    // One migrator per schema at a time, across processes; the lock ends with the transaction.
    conn.exec("SELECT pg_advisory_xact_lock(hashtext('letterbox.schema'), hashtext($1))",
              {param::text(name)}, ec);
    if (ec)
        return fail(ec);
    for (const char* sql : {"CREATE SCHEMA IF NOT EXISTS {schema}",
                            "CREATE TABLE IF NOT EXISTS {schema}.letterbox_schema_version ("
                            "component text PRIMARY KEY, version integer NOT NULL)"})
        if (auto e = conn.exec(detail::with_schema(sql, quoted)))
            return fail(e);
    // Read again under the lock: another process may have migrated in between.
    const int current = installed_version(conn, name, ec);
    if (ec)
        return fail(ec);
    if (current > latest_version())
        return fail(errc::store_schema_too_new);
    for (const auto& step : migrations()) {
        if (step.version <= current)
            continue;
        if (auto e = conn.exec(detail::with_schema(step.sql, quoted)))
            return fail(e);
    }
    conn.exec(detail::with_schema("INSERT INTO {schema}.letterbox_schema_version (component, "
                                  "version) VALUES ($1, $2) ON CONFLICT (component) DO UPDATE "
                                  "SET version = excluded.version",
                                  quoted),
              {param::text(component), param(std::int64_t{latest_version()})}, ec);
    if (ec)
        return fail(ec);
    return conn.exec("COMMIT");
}

} // namespace letterbox::postgres
