// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/postgres/connection.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/postgres/connection.hpp>
#include <letterbox/postgres/to_error_code.hpp>

#include <libpq-fe.h>

#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

namespace detail {

/// `text` with every occurrence of `secret` replaced by `***` (a secret shorter than 3
/// characters is left: replacing it would garble the text and hide nothing).
LETTERBOX_DECL std::string scrub(std::string text, std::string_view secret) {
    if (secret.size() < 3)
        return text;
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3))
        text.replace(at, secret.size(), "***");
    return text;
}

/// libpq's message without its trailing newline.
LETTERBOX_DECL std::string trimmed(const char* message) {
    std::string text = message ? message : "";
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

} // namespace detail

LETTERBOX_DECL connection connection::open(std::string_view conninfo,
                                           std::chrono::seconds connect_timeout,
                                           std::string_view application_name, std::error_code& ec,
                                           std::string* error_message) {
    ec.clear();
    const std::string info(conninfo);
    // Parsed first, to learn the password (to scrub it from messages) and to refuse a string
    // libpq cannot read without repeating it: its complaint quotes the text, password included.
    char* parse_error = nullptr;
    PQconninfoOption* options = PQconninfoParse(info.c_str(), &parse_error);
    if (!options) {
        PQfreemem(parse_error);
        ec = errc::invalid_argument;
        if (error_message)
            *error_message = "the PostgreSQL connection string is malformed (libpq cannot parse "
                             "it; its text is not shown, since it may hold a password)";
        return {};
    }
    auto s = std::make_unique<state>();
    for (auto* o = options; o->keyword; ++o)
        if (std::string_view(o->keyword) == "password" && o->val)
            s->password = o->val;
    PQconninfoFree(options);

    // Defaults first: what the string itself names wins (expand_dbname).
    const std::string timeout = std::to_string(connect_timeout.count());
    const std::string name(application_name);
    const char* keywords[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {timeout.c_str(), name.c_str(), info.c_str(), nullptr};
    s->conn = PQconnectdbParams(keywords, values, 1);
    if (!s->conn) {
        ec = errc::store_error; // out of memory in libpq
        if (error_message)
            *error_message = "libpq could not allocate a connection";
        return {};
    }
    if (PQstatus(s->conn) != CONNECTION_OK) {
        const std::string why =
            detail::scrub(detail::trimmed(PQerrorMessage(s->conn)), s->password);
        // libpq reports a refused login or a missing database in its text only.
        const bool refused = why.find("authentication failed") != std::string::npos ||
                             why.find("does not exist") != std::string::npos ||
                             why.find("no pg_hba.conf entry") != std::string::npos ||
                             why.find("password") != std::string::npos;
        ec = refused ? errc::store_unavailable : errc::store_connection_lost;
        if (error_message)
            *error_message = why;
        return {};
    }
    // The server's notices (`CREATE SCHEMA IF NOT EXISTS` skipping, ...) are not errors, and
    // libpq would print them on stderr.
    PQsetNoticeProcessor(
        s->conn, [](void*, const char*) {}, nullptr);
    connection c;
    c.state_ = std::move(s);
    return c;
}

LETTERBOX_DECL std::error_code connection::fail_with(PGresult* r, std::error_code fallback) {
    const char* sqlstate = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    state_->last_sqlstate = sqlstate ? sqlstate : "";
    state_->last_error =
        detail::scrub(detail::trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(state_->conn)),
                      state_->password);
    if (state_->last_error.empty())
        state_->last_error =
            detail::scrub(detail::trimmed(PQerrorMessage(state_->conn)), state_->password);
    if (PQstatus(state_->conn) == CONNECTION_BAD)
        return errc::store_connection_lost;
    if (auto ec = to_error_code(state_->last_sqlstate))
        return ec;
    return fallback;
}

LETTERBOX_DECL std::error_code connection::exec(std::string_view sql) {
    if (!state_)
        return errc::closed;
    const std::string text(sql);
    result r(PQexec(state_->conn, text.c_str()));
    const auto status = r ? PQresultStatus(r.native_handle()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY)
        return {};
    return fail_with(r.native_handle(), errc::store_error);
}

LETTERBOX_DECL result connection::exec(std::string_view sql, std::span<const param> params,
                                       std::error_code& ec) {
    ec.clear();
    if (!state_) {
        ec = errc::closed;
        return {};
    }
    const int count = static_cast<int>(params.size());
    std::string key(sql);
    auto found = state_->prepared.find(key);
    if (found == state_->prepared.end()) {
        std::string name = "letterbox_" + std::to_string(state_->prepared.size() + 1);
        result prepared(PQprepare(state_->conn, name.c_str(), key.c_str(), count, nullptr));
        if (!prepared || PQresultStatus(prepared.native_handle()) != PGRES_COMMAND_OK) {
            ec = fail_with(prepared.native_handle(), errc::store_error);
            return {};
        }
        found = state_->prepared.emplace(std::move(key), std::move(name)).first;
    }
    std::vector<const char*> values(params.size());
    std::vector<int> lengths(params.size());
    std::vector<int> formats(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const auto& p = params[i];
        if (p.is_null())
            continue; // values[i] stays null
        const auto v = p.value();
        // A zero-length value still needs a non-null pointer: null means SQL NULL.
        values[i] = v.empty() ? "" : v.data();
        lengths[i] = static_cast<int>(v.size());
        formats[i] = p.is_binary() ? 1 : 0;
    }
    // Text parameters are sent with their lengths only in binary format; in text format libpq
    // reads up to a terminating zero, so text views are copied into terminated strings.
    std::vector<std::string> terminated;
    terminated.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i)
        if (values[i] && formats[i] == 0) {
            terminated.emplace_back(params[i].value());
            values[i] = terminated.back().c_str();
        }
    result r(PQexecPrepared(state_->conn, found->second.c_str(), count, values.data(),
                            lengths.data(), formats.data(), 0));
    const auto status = r ? PQresultStatus(r.native_handle()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
        return r;
    ec = fail_with(r.native_handle(), errc::store_error);
    return {};
}

LETTERBOX_DECL bool connection::in_transaction() const noexcept {
    if (!state_)
        return false;
    const auto s = PQtransactionStatus(state_->conn);
    return s == PQTRANS_INTRANS || s == PQTRANS_INERROR || s == PQTRANS_ACTIVE;
}

LETTERBOX_DECL bool connection::in_failed_transaction() const noexcept {
    return state_ && PQtransactionStatus(state_->conn) == PQTRANS_INERROR;
}

LETTERBOX_DECL bool connection::is_broken() const noexcept {
    return !state_ || PQstatus(state_->conn) != CONNECTION_OK;
}

LETTERBOX_DECL const std::string& connection::last_error_message() const noexcept {
    static const std::string none;
    return state_ ? state_->last_error : none;
}

LETTERBOX_DECL const std::string& connection::last_sqlstate() const noexcept {
    static const std::string none;
    return state_ ? state_->last_sqlstate : none;
}

} // namespace letterbox::postgres
