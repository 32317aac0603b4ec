// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state a postgres::database shares with its stores and units of work: the options, the
// schema's name and the connection pool. Private.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/postgres/connection.hpp>
#include <letterbox/postgres/database_options.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres::detail {

class database_state;

/// A connection lent by the pool; it goes back when the loan ends. A connection that is broken
/// or still in a transaction is closed instead of going back.
class pooled_connection {
public:
    pooled_connection() noexcept = default;
    pooled_connection(std::shared_ptr<database_state> owner, connection c) noexcept
        : owner_(std::move(owner))
        , conn_(std::move(c)) {}
    pooled_connection(pooled_connection&& other) noexcept = default;
    pooled_connection& operator=(pooled_connection&& other) noexcept {
        if (this != &other) {
            give_back();
            owner_ = std::move(other.owner_);
            conn_ = std::move(other.conn_);
        }
        return *this;
    }
    pooled_connection(const pooled_connection&) = delete;
    pooled_connection& operator=(const pooled_connection&) = delete;
    ~pooled_connection() { give_back(); }

    explicit operator bool() const noexcept { return conn_.is_open(); }
    connection& operator*() noexcept { return conn_; }
    connection* operator->() noexcept { return &conn_; }

private:
    void give_back() noexcept;

    std::shared_ptr<database_state> owner_;
    connection conn_;
};

class database_state : public std::enable_shared_from_this<database_state> {
public:
    database_state(std::string conninfo, database_options options, std::string quoted_schema)
        : conninfo_(std::move(conninfo))
        , options_(std::move(options))
        , schema_(std::move(quoted_schema)) {}

    const database_options& options() const noexcept { return options_; }
    /// The schema's name, quoted for SQL (`"letterbox"`).
    const std::string& schema() const noexcept { return schema_; }
    /// The schema's name as the options gave it (`letterbox`).
    const std::string& schema_name() const noexcept { return options_.schema; }
    /// The connection string, for a component that opens a connection of its own (a
    /// listener). Holds the password: never show it.
    const std::string& conninfo() const noexcept { return conninfo_; }

    /// Lends a connection: an idle one, or a new one while fewer than `max_connections` are
    /// open, or the next one given back within `acquire_timeout` (else `errc::store_busy`).
    pooled_connection acquire(std::error_code& ec) {
        ec.clear();
        std::unique_lock lock(mutex_);
        const auto deadline = std::chrono::steady_clock::now() + options_.acquire_timeout;
        while (idle_.empty() && open_ >= options_.max_connections)
            if (returned_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
                open_ >= options_.max_connections) {
                ec = errc::store_busy;
                last_error_ = "no connection of the pool came free within acquire_timeout";
                return {};
            }
        if (!idle_.empty()) {
            connection c = std::move(idle_.back());
            idle_.pop_back();
            return {shared_from_this(), std::move(c)};
        }
        ++open_; // reserved while connecting, outside the lock
        lock.unlock();
        std::string why;
        connection c = connection::open(conninfo_, options_.connect_timeout,
                                        options_.application_name, ec, &why);
        if (!ec)
            ec = configure(c, why);
        if (ec) {
            lock.lock();
            --open_;
            last_error_ = std::move(why);
            returned_.notify_one();
            return {};
        }
        return {shared_from_this(), std::move(c)};
    }

    /// Runs `op(connection&) -> std::error_code` on a lent connection, keeping the server's text
    /// of a failure.
    template <class Op>
    std::error_code run(Op&& op) {
        std::error_code ec;
        auto c = acquire(ec);
        if (ec)
            return ec;
        ec = op(*c);
        if (ec && !c->last_error_message().empty())
            record_error(c->last_error_message());
        return ec;
    }

    /// Applies the options' session settings to a new connection.
    std::error_code configure(connection& c, std::string& why) const {
        const auto set = [&](const char* name, std::chrono::milliseconds value) {
            auto ec = c.exec(std::string("SET ") + name + " = " + std::to_string(value.count()));
            if (ec)
                why = c.last_error_message();
            return ec;
        };
        if (options_.lock_timeout)
            if (auto ec = set("lock_timeout", *options_.lock_timeout))
                return ec;
        if (options_.statement_timeout)
            if (auto ec = set("statement_timeout", *options_.statement_timeout))
                return ec;
        return {};
    }

    void record_error(std::string text) {
        std::lock_guard lock(mutex_);
        last_error_ = std::move(text);
    }
    std::string last_error() const {
        std::lock_guard lock(mutex_);
        return last_error_;
    }
    std::size_t open_connections() const {
        std::lock_guard lock(mutex_);
        return open_;
    }
    std::size_t idle_connections() const {
        std::lock_guard lock(mutex_);
        return idle_.size();
    }

    void give_back(connection c) noexcept {
        const bool reusable = !c.is_broken() && !c.in_transaction();
        std::lock_guard lock(mutex_);
        if (reusable) {
            try {
                idle_.push_back(std::move(c));
            } catch (...) {
                --open_; // c closes as it goes out of scope
            }
        } else {
            --open_;
        }
        returned_.notify_one();
    }

private:
    const std::string conninfo_; // holds the password: never shown
    const database_options options_;
    const std::string schema_;
    mutable std::mutex mutex_;
    std::condition_variable returned_;
    std::vector<connection> idle_;
    std::size_t open_ = 0;
    std::string last_error_;
};

inline void pooled_connection::give_back() noexcept {
    if (owner_ && conn_.is_open())
        owner_->give_back(std::move(conn_));
    owner_.reset();
}

} // namespace letterbox::postgres::detail
