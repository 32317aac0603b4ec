// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/sqlite/database.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/sqlite/database.hpp>

#include <memory>
#include <string>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

namespace detail {

/// `PRAGMA quick_check`: success when it reports "ok", else `errc::store_corrupt` with its
/// findings in `text`.
LETTERBOX_DECL std::error_code quick_check(connection& c, std::string& text) {
    std::error_code ec;
    auto st = c.prepare("PRAGMA quick_check", ec);
    if (ec) {
        text = c.last_error_message();
        return ec;
    }
    std::string findings;
    int rows = 0;
    while (st->step(ec) && rows < 10) {
        if (!findings.empty())
            findings += "; ";
        findings += st->column_text(0);
        ++rows;
    }
    if (ec) {
        text = c.last_error_message();
        return ec;
    }
    if (findings != "ok") {
        text = "quick_check: " + findings;
        return errc::store_corrupt;
    }
    return {};
}

/// Checks, without writing, that `c`'s file holds letterbox's schema: `errc::store_not_a_database`
/// for a file without it, `errc::store_schema_too_new` for a newer one and, when `read_only`
/// (which cannot migrate), `errc::store_schema_too_old` for an older one; `text` says which.
LETTERBOX_DECL std::error_code check_existing_schema(connection& c, bool read_only,
                                                     std::string& text) {
    std::error_code ec;
    const int version = schema::installed_version(c, ec);
    if (ec) {
        text = c.last_error_message();
        return ec;
    }
    if (version == 0) {
        text = "the file has no letterbox schema: no '" + std::string(schema::component) +
               "' row in letterbox_schema_version";
        return errc::store_not_a_database;
    }
    if (version > schema::latest_version()) {
        text = "the database has letterbox schema version " + std::to_string(version) +
               "; this library knows versions up to " + std::to_string(schema::latest_version());
        return errc::store_schema_too_new;
    }
    if (read_only && version < schema::latest_version()) {
        text = "the database has letterbox schema version " + std::to_string(version) +
               "; this library reads version " + std::to_string(schema::latest_version());
        return errc::store_schema_too_old;
    }
    return {};
}

} // namespace detail

LETTERBOX_DECL database database::open(const std::string& path, const database_options& options,
                                       std::error_code& ec) {
    database db;
    auto state = std::make_shared<detail::database_state>(path, options);
    if (options.read_only || !options.create_schema_if_missing) {
        // Look before writing anything: a read-only connection checks the schema, so that a file
        // that is not letterbox's is refused exactly as it was (no WAL switch, no tables).
        auto probe_options = options;
        probe_options.read_only = true;
        std::unique_ptr<connection> probe;
        ec = state->retrying([&] {
            std::error_code e;
            probe = std::make_unique<connection>(
                connection::open(path, probe_options, e, &db.open_error_));
            return e;
        });
        if (ec)
            return db;
        ec = state->retrying([&] {
            return detail::check_existing_schema(*probe, options.read_only, db.open_error_);
        });
        if (ec)
            return db;
        if (options.read_only) {
            if (options.quick_check_on_open) {
                ec = detail::quick_check(*probe, db.open_error_);
                if (ec)
                    return db;
            }
            db.open_error_.clear();
            state->adopt(std::move(probe));
            db.state_ = std::move(state);
            return db;
        }
    }
    // Two processes (or threads) opening a new file at once can meet in a lock upgrade that
    // SQLite answers with SQLITE_BUSY at once, without waiting (switching to WAL while the
    // other one reads): the open is retried like any busy operation.
    std::unique_ptr<connection> first;
    ec = state->retrying([&] {
        std::error_code e;
        first = std::make_unique<connection>(connection::open(path, options, e, &db.open_error_));
        return e;
    });
    if (ec)
        return db;
    if (options.quick_check_on_open) {
        ec = detail::quick_check(*first, db.open_error_);
        if (ec)
            return db;
    }
    ec = state->retrying([&] { return schema::migrate(*first); });
    if (ec == errc::store_schema_too_new) {
        std::error_code read_ec;
        db.open_error_ = "the database has letterbox schema version " +
                         std::to_string(schema::installed_version(*first, read_ec)) +
                         "; this library knows versions up to " +
                         std::to_string(schema::latest_version());
        return db;
    }
    if (ec) {
        db.open_error_ = first->last_error_message();
        return db;
    }
    db.open_error_.clear();
    state->adopt(std::move(first));
    db.state_ = std::move(state);
    return db;
}

LETTERBOX_DECL database database::open(const std::string& path, const database_options& options) {
    std::error_code ec;
    auto db = open(path, options, ec);
    if (ec)
        throw error(ec, "cannot open the SQLite database '" + path + "': " + db.open_error_);
    return db;
}

LETTERBOX_DECL unit_of_work database::begin(std::error_code& ec) {
    ec.clear();
    if (!state_) {
        ec = errc::closed;
        return {};
    }
    if (state_->options().read_only) {
        ec = errc::store_readonly;
        state_->record_error("the database was opened read-only (database_options::read_only)");
        return {};
    }
    detail::pooled_connection held;
    ec = state_->retrying([&] {
        std::error_code e;
        auto c = state_->acquire(e); // back to the pool before a backoff
        if (e)
            return e;
        e = detail::exec_cached(*c, "BEGIN IMMEDIATE");
        if (e)
            state_->record_error(*c);
        else
            held = std::move(c);
        return e;
    });
    if (ec)
        return {};
    return unit_of_work(state_, std::move(held));
}

LETTERBOX_DECL unit_of_work database::begin() {
    std::error_code ec;
    auto uow = begin(ec);
    if (ec)
        throw error(ec, "cannot begin a unit of work on '" + path() + "': " + last_error_message());
    return uow;
}

LETTERBOX_DECL const std::string& database::path() const noexcept {
    static const std::string none;
    return state_ ? state_->path() : none;
}

LETTERBOX_DECL const database_options& database::options() const noexcept {
    static const database_options defaults;
    return state_ ? state_->options() : defaults;
}

LETTERBOX_DECL std::string database::last_error_message() const {
    return state_ ? state_->last_error_message() : open_error_;
}

LETTERBOX_DECL std::uint64_t database::busy_retries() const noexcept {
    return state_ ? state_->busy_retries() : 0;
}

LETTERBOX_DECL std::size_t database::open_connections() const noexcept {
    return state_ ? state_->open_connections() : 0;
}

LETTERBOX_DECL std::size_t database::idle_connections() const {
    return state_ ? state_->idle_connections() : 0;
}

} // namespace letterbox::sqlite
