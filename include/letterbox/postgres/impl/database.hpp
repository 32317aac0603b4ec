// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/postgres/database.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/impl/schema.hpp>

#include <memory>
#include <string>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

LETTERBOX_DECL database database::open(std::string_view conninfo, const database_options& options,
                                       std::error_code& ec) {
    ec.clear();
    database db;
    if (!schema::valid_name(options.schema)) {
        ec = errc::invalid_argument;
        db.open_error_ = "the schema name must be 1 to 63 lower-case letters, digits or '_', "
                         "not starting with a digit";
        return db;
    }
    if (options.max_connections == 0) {
        ec = errc::invalid_argument;
        db.open_error_ = "max_connections must be at least 1";
        return db;
    }
    auto state = std::make_shared<detail::database_state>(std::string(conninfo), options,
                                                          detail::quoted_schema(options.schema));
    {
        auto conn = state->acquire(ec);
        if (ec) {
            db.open_error_ = state->last_error();
            return db;
        }
        if (auto e = schema::migrate(*conn, options.schema, options.create_schema_if_missing)) {
            ec = e;
            db.open_error_ = conn->last_error_message();
            if (db.open_error_.empty())
                db.open_error_ = ec.message();
            return db;
        }
    }
    db.state_ = std::move(state);
    return db;
}

LETTERBOX_DECL database database::open(std::string_view conninfo, const database_options& options) {
    std::error_code ec;
    auto db = open(conninfo, options, ec);
    if (ec)
        throw error(ec, "cannot open the PostgreSQL database (schema '" + options.schema +
                            "'): " + db.open_error_);
    return db;
}

LETTERBOX_DECL unit_of_work database::begin(std::error_code& ec) {
    ec.clear();
    if (!state_) {
        ec = errc::closed;
        return {};
    }
    auto conn = state_->acquire(ec);
    if (ec)
        return {};
    const char* begin_sql = "BEGIN";
    switch (state_->options().isolation) {
    case database_options::isolation_level::read_committed:
        break;
    case database_options::isolation_level::repeatable_read:
        begin_sql = "BEGIN ISOLATION LEVEL REPEATABLE READ";
        break;
    case database_options::isolation_level::serializable:
        begin_sql = "BEGIN ISOLATION LEVEL SERIALIZABLE";
        break;
    }
    if (auto e = conn->exec(begin_sql)) {
        state_->record_error(conn->last_error_message());
        ec = e;
        return {};
    }
    return unit_of_work(state_, std::move(conn));
}

LETTERBOX_DECL unit_of_work database::begin() {
    std::error_code ec;
    auto u = begin(ec);
    if (ec)
        throw error(ec, "cannot begin a unit of work on PostgreSQL: " + last_error_message());
    return u;
}

LETTERBOX_DECL const database_options& database::options() const noexcept {
    static const database_options none;
    return state_ ? state_->options() : none;
}

LETTERBOX_DECL std::string database::last_error_message() const {
    return state_ ? state_->last_error() : open_error_;
}

LETTERBOX_DECL std::size_t database::open_connections() const {
    return state_ ? state_->open_connections() : 0;
}

LETTERBOX_DECL std::size_t database::idle_connections() const {
    return state_ ? state_->idle_connections() : 0;
}

} // namespace letterbox::postgres
