// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/sqlite/connection.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/to_error_code.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

namespace detail {

LETTERBOX_DECL const char* synchronous_pragma(database_options::synchronous_mode mode) noexcept {
    switch (mode) {
    case database_options::synchronous_mode::off:
        return "PRAGMA synchronous=OFF";
    case database_options::synchronous_mode::normal:
        return "PRAGMA synchronous=NORMAL";
    case database_options::synchronous_mode::full:
        return "PRAGMA synchronous=FULL";
    case database_options::synchronous_mode::extra:
        return "PRAGMA synchronous=EXTRA";
    }
    return "PRAGMA synchronous=NORMAL";
}

} // namespace detail

LETTERBOX_DECL connection connection::open(const std::string& path, const database_options& options,
                                           std::error_code& ec, std::string* open_error_message) {
    ec.clear();
    connection c;
    auto fail = [&](std::error_code e, const std::string& text) {
        ec = e;
        if (open_error_message)
            *open_error_message = text;
        return connection();
    };
    if (path.empty() || path == ":memory:")
        return fail(errc::precondition_failed,
                    "letterbox::sqlite needs a database file, not an in-memory database");

    c.state_ = std::make_unique<state>();
    c.state_->cache_capacity = options.statement_cache_capacity;
    int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
    if (options.read_only)
        flags |= SQLITE_OPEN_READONLY; // never SQLITE_OPEN_CREATE: a missing file stays missing
    else
        flags |= SQLITE_OPEN_READWRITE | (options.create_if_missing ? SQLITE_OPEN_CREATE : 0);
    const int rc = sqlite3_open_v2(path.c_str(), &c.state_->db, flags, nullptr);
    if (rc != SQLITE_OK) {
        // Even a failed open may allocate a handle that carries the message; ~state closes it.
        c.state_->last_error.capture(c.state_->db, rc);
        return fail(to_error_code(rc), c.state_->last_error.text);
    }
    sqlite3_extended_result_codes(c.state_->db, 1);
    const auto timeout =
        std::clamp<std::chrono::milliseconds::rep>(options.busy_timeout.count(), 0, INT_MAX);
    sqlite3_busy_timeout(c.state_->db, static_cast<int>(timeout));

    // SQLite reads the file lazily. Read the header and the schema page now, so that a file
    // that is not a database, or whose first page is damaged, is refused at open.
    if (auto e = c.run_setup("SELECT count(*) FROM sqlite_master"))
        return fail(e, c.last_error_message());

    // Switching to WAL writes the file's header: a read-only connection reads the file in
    // whatever journal mode it is.
    if (!options.read_only) {
        std::error_code mode_ec;
        const std::string mode = c.query_text("PRAGMA journal_mode=WAL", mode_ec);
        if (mode_ec)
            return fail(mode_ec, c.last_error_message());
        if (mode != "wal") {
            c.state_->last_error.set(SQLITE_ERROR, "journal_mode=WAL was refused");
            return fail(errc::store_error,
                        "journal_mode=WAL was refused; the journal mode is " + mode);
        }
    }
    if (auto e = c.run_setup("PRAGMA foreign_keys=ON"))
        return fail(e, c.last_error_message());
    if (auto e = c.run_setup(detail::synchronous_pragma(options.synchronous)))
        return fail(e, c.last_error_message());
    for (const auto& pragma : options.pragmas)
        if (auto e = c.run_setup("PRAGMA " + pragma))
            return fail(e, c.last_error_message());
    return c;
}

LETTERBOX_DECL std::error_code connection::run_setup(std::string_view sql) {
    std::error_code ec;
    auto st = statement::prepare(state_->db, sql, ec);
    if (ec) {
        state_->last_error.capture(state_->db, sqlite3_errcode(state_->db));
        return ec;
    }
    st.errors_ = &state_->last_error;
    return st.execute();
}

LETTERBOX_DECL std::string connection::query_text(std::string_view sql, std::error_code& ec) {
    auto st = statement::prepare(state_->db, sql, ec);
    if (ec) {
        state_->last_error.capture(state_->db, sqlite3_errcode(state_->db));
        return {};
    }
    st.errors_ = &state_->last_error;
    std::string value;
    if (st.step(ec))
        value = std::string(st.column_text(0));
    else if (ec)
        return {};
    st.reset();
    return value;
}

LETTERBOX_DECL std::error_code connection::exec(std::string_view sql) {
    if (!is_open())
        return errc::closed;
    // sqlite3_exec needs a NUL-terminated string.
    const std::string text(sql);
    char* message = nullptr;
    const int rc = sqlite3_exec(state_->db, text.c_str(), nullptr, nullptr, &message);
    if (rc != SQLITE_OK) {
        if (message)
            state_->last_error.set(sqlite3_extended_errcode(state_->db), message);
        else
            state_->last_error.capture(state_->db, rc);
    }
    sqlite3_free(message);
    return to_error_code(rc);
}

LETTERBOX_DECL connection::prepared connection::prepare(std::string_view sql, std::error_code& ec) {
    ec.clear();
    prepared p;
    if (!is_open()) {
        ec = errc::closed;
        return p;
    }
    auto it = state_->cache.find(sql);
    if (it != state_->cache.end() && !it->second->borrowed) {
        it->second->borrowed = true;
        p.stmt_ = &it->second->stmt;
        p.borrowed_ = &it->second->borrowed;
        return p;
    }
    statement fresh = statement::prepare(state_->db, sql, ec);
    if (ec) {
        state_->last_error.capture(state_->db, sqlite3_extended_errcode(state_->db));
        return p;
    }
    fresh.errors_ = &state_->last_error;
    if (it == state_->cache.end() && state_->cache.size() < state_->cache_capacity) {
        auto entry = std::make_unique<cache_entry>();
        entry->stmt = std::move(fresh);
        entry->borrowed = true;
        auto [pos, inserted] = state_->cache.emplace(std::string(sql), std::move(entry));
        (void)inserted;
        p.stmt_ = &pos->second->stmt;
        p.borrowed_ = &pos->second->borrowed;
        return p;
    }
    p.owned_ = std::move(fresh);
    p.stmt_ = &p.owned_;
    return p;
}

LETTERBOX_DECL bool connection::in_transaction() const noexcept {
    return is_open() && sqlite3_get_autocommit(state_->db) == 0;
}

LETTERBOX_DECL std::int64_t connection::changes() const noexcept {
    return is_open() ? sqlite3_changes64(state_->db) : 0;
}

LETTERBOX_DECL std::int64_t connection::last_insert_rowid() const noexcept {
    return is_open() ? sqlite3_last_insert_rowid(state_->db) : 0;
}

LETTERBOX_DECL const std::string& connection::last_error_message() const noexcept {
    static const std::string none;
    return state_ ? state_->last_error.text : none;
}

LETTERBOX_DECL int connection::last_result_code() const noexcept {
    return state_ ? state_->last_error.code : SQLITE_OK;
}

LETTERBOX_DECL std::size_t connection::cached_statements() const noexcept {
    return state_ ? state_->cache.size() : 0;
}

} // namespace letterbox::sqlite
