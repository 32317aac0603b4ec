// SPDX-License-Identifier: BSL-1.0
#pragma once

// What a `database`, its units of work and its stores share: the file's path and options,
// the connection pool, the busy-retry policy and the last driver error. Private.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database_options.hpp>
#include <letterbox/sqlite/detail/time.hpp>
#include <letterbox/store_time.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite::detail {

/// Whether `ec` is one of the database errors (`errc::store_*`), whose driver text is worth
/// keeping, as opposed to a store's own verdict (lease lost, not found, ...).
inline bool is_driver_error(std::error_code ec) noexcept {
    return ec.category() == letterbox::error_category() &&
           ec.value() >= static_cast<int>(errc::store_not_a_database) &&
           ec.value() <= static_cast<int>(errc::store_error);
}

/// Runs a one-statement SQL text (BEGIN, COMMIT, ROLLBACK, ...) through the statement cache.
inline std::error_code exec_cached(connection& c, std::string_view sql) {
    std::error_code ec;
    auto st = c.prepare(sql, ec);
    if (ec)
        return ec;
    return st->execute();
}

/// Binds `text` to parameter `index` of `st` (see `prepare_bound`).
inline void bind_parameter(statement& st, int index, std::string_view text) noexcept {
    st.bind_text(index, text);
}

/// Binds `value` to parameter `index` of `st` (see `prepare_bound`).
inline void bind_parameter(statement& st, int index, std::int64_t value) noexcept {
    st.bind_int64(index, value);
}

/// Bytes to bind as a BLOB (see `prepare_bound`).
struct blob {
    std::string_view bytes;
};

/// Binds `value` to parameter `index` of `st` as a BLOB (see `prepare_bound`).
inline void bind_parameter(statement& st, int index, blob value) noexcept {
    st.bind_blob(index, value.bytes);
}

/// Borrows the cached statement for `sql` from `c` and binds `args` to its parameters ?1, ?2,
/// ... in order: string-like ones as TEXT, `std::int64_t` ones as INTEGER, `blob`s as BLOB
/// (the results of the binds are not checked). On a failed prepare, `ec` holds the error and
/// nothing is bound.
template <class... Args>
connection::prepared prepare_bound(connection& c, std::string_view sql, std::error_code& ec,
                                   const Args&... args) {
    auto st = c.prepare(sql, ec);
    if (!ec) {
        int index = 0;
        (bind_parameter(*st, ++index, args), ...);
    }
    return st;
}

/// Rolls back the open transaction of `c`, if any; best effort.
inline void rollback_quietly(connection& c) noexcept {
    try {
        if (c.in_transaction())
            exec_cached(c, "ROLLBACK");
    } catch (...) {
    }
}

class database_state;

/// A connection lent by the pool; given back when the lease ends.
class pooled_connection {
public:
    pooled_connection() noexcept = default;
    pooled_connection(database_state* pool, std::unique_ptr<connection> c) noexcept
        : pool_(pool)
        , conn_(std::move(c)) {}
    pooled_connection(pooled_connection&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr))
        , conn_(std::move(other.conn_)) {}
    pooled_connection& operator=(pooled_connection&& other) noexcept {
        if (this != &other) {
            reset();
            pool_ = std::exchange(other.pool_, nullptr);
            conn_ = std::move(other.conn_);
        }
        return *this;
    }
    pooled_connection(const pooled_connection&) = delete;
    pooled_connection& operator=(const pooled_connection&) = delete;
    ~pooled_connection() { reset(); }

    explicit operator bool() const noexcept { return conn_ != nullptr; }
    connection& operator*() const noexcept { return *conn_; }
    connection* operator->() const noexcept { return conn_.get(); }

    /// Gives the connection back to the pool now.
    void reset() noexcept;
    /// Closes the connection instead of giving it back for reuse (its state is not trusted).
    void discard() noexcept {
        if (conn_)
            *conn_ = connection{}; // closes it; the pool then counts it as gone
        reset();
    }

private:
    database_state* pool_ = nullptr;
    std::unique_ptr<connection> conn_;
};

class database_state {
public:
    database_state(std::string path, database_options options)
        : path_(std::move(path))
        , options_(std::move(options))
        , rng_(options_.jitter_seed != 0 ? options_.jitter_seed : seed_from_device()) {}

    database_state(const database_state&) = delete;
    database_state& operator=(const database_state&) = delete;

    const std::string& path() const noexcept { return path_; }
    const database_options& options() const noexcept { return options_; }

    /// Adopts the connection `database::open` validated and migrated with.
    void adopt(std::unique_ptr<connection> c) {
        opened_.fetch_add(1);
        release(std::move(c));
    }

    /// An idle connection, or a new one when none is idle.
    pooled_connection acquire(std::error_code& ec) {
        ec.clear();
        {
            std::lock_guard lock(mutex_);
            if (!idle_.empty()) {
                auto c = std::move(idle_.back());
                idle_.pop_back();
                return pooled_connection(this, std::move(c));
            }
        }
        // Opening reads the file: do it outside the lock.
        std::string text;
        auto c = std::make_unique<connection>(connection::open(path_, options_, ec, &text));
        if (ec) {
            record_error(text);
            return {};
        }
        opened_.fetch_add(1);
        return pooled_connection(this, std::move(c));
    }

    /// Takes back a connection: it is kept if it is healthy and fewer than
    /// `max_idle_connections` are idle, else closed.
    void release(std::unique_ptr<connection> c) noexcept {
        if (!c)
            return;
        // A lease that ended inside a transaction (an exception, say) must not leak it into
        // the next user.
        rollback_quietly(*c);
        if (c->is_open() && !c->in_transaction()) {
            std::lock_guard lock(mutex_);
            if (idle_.size() < options_.max_idle_connections) {
                try {
                    idle_.push_back(std::move(c));
                    return;
                } catch (...) {
                }
            }
        }
        opened_.fetch_sub(1);
        c.reset(); // closes, outside the lock
    }

    /// Connections open now: idle plus lent.
    std::size_t open_connections() const noexcept { return opened_.load(); }
    std::size_t idle_connections() const {
        std::lock_guard lock(mutex_);
        return idle_.size();
    }

    /// Keeps the driver's text of a failure for `database::last_error_message()`.
    void record_error(std::string_view text) noexcept {
        try {
            std::lock_guard lock(mutex_);
            last_error_ = text;
        } catch (...) {
        }
    }
    void record_error(const connection& c) noexcept { record_error(c.last_error_message()); }
    std::string last_error_message() const {
        std::lock_guard lock(mutex_);
        return last_error_;
    }

    /// Retries made so far because the database was locked.
    std::uint64_t busy_retries() const noexcept { return busy_retries_.load(); }

    /// Runs `op() -> std::error_code`, again after a backoff while it fails with
    /// `errc::store_busy` and retries are left (counting and reporting each retry). `op` must
    /// leave no effect when it fails, and hold no pooled connection across the backoff.
    template <class Op>
    std::error_code retrying(Op&& op) {
        for (unsigned attempt = 0;; ++attempt) {
            const std::error_code ec = op();
            if (ec != errc::store_busy || attempt >= options_.max_busy_retries)
                return ec;
            const auto delay = backoff(attempt);
            busy_retries_.fetch_add(1);
            if (options_.on_busy_retry)
                options_.on_busy_retry(attempt + 1, delay);
            if (delay.count() > 0)
                std::this_thread::sleep_for(delay);
        }
    }

    /// Runs `op(connection&) -> std::error_code` on a pooled connection, `retrying` while the
    /// database is busy. `op` must leave no effect when it fails (roll back what it began).
    template <class Op>
    std::error_code run(Op&& op) {
        return retrying([&] {
            std::error_code ec;
            auto c = acquire(ec); // back to the pool before a backoff
            if (ec)
                return ec;
            ec = op(*c);
            if (ec && is_driver_error(ec))
                record_error(*c);
            return ec;
        });
    }

private:
    static std::uint64_t seed_from_device() {
        std::random_device rd;
        return (std::uint64_t{rd()} << 32) ^ rd();
    }

    std::chrono::milliseconds backoff(unsigned attempt) {
        using std::chrono::milliseconds;
        const auto base = std::max<milliseconds::rep>(options_.busy_retry_base_delay.count(), 0);
        const auto cap = std::max<milliseconds::rep>(options_.busy_retry_max_delay.count(), 0);
        milliseconds::rep full = base;
        for (unsigned i = 0; i < attempt && full < cap; ++i)
            full *= 2;
        full = std::min(full, cap);
        if (full <= 1)
            return milliseconds(full);
        // "Equal jitter": half fixed, half random, so concurrent retriers spread out but
        // still back off.
        std::lock_guard lock(mutex_);
        std::uniform_int_distribution<milliseconds::rep> jitter(0, full - full / 2);
        return milliseconds(full / 2 + jitter(rng_));
    }

    const std::string path_;
    const database_options options_;
    mutable std::mutex mutex_; // guards idle_, last_error_ and rng_
    std::vector<std::unique_ptr<connection>> idle_;
    std::string last_error_;
    std::mt19937_64 rng_;
    std::atomic<std::size_t> opened_{0};
    std::atomic<std::uint64_t> busy_retries_{0};
};

inline void pooled_connection::reset() noexcept {
    if (pool_ && conn_)
        pool_->release(std::move(conn_));
    conn_.reset();
    pool_ = nullptr;
}

/// What write_transaction and read_transaction share: a transaction on a connection that
/// `open` begins, rolled back on destruction unless it was ended.
class scoped_transaction {
public:
    scoped_transaction(const scoped_transaction&) = delete;
    scoped_transaction& operator=(const scoped_transaction&) = delete;

protected:
    explicit scoped_transaction(connection& c) noexcept
        : conn_(c) {}
    ~scoped_transaction() {
        if (open_)
            rollback_quietly(conn_);
    }

    /// Runs `begin_sql` (`BEGIN` or `BEGIN IMMEDIATE`); the transaction is open if it succeeded.
    std::error_code open(std::string_view begin_sql) {
        auto ec = exec_cached(conn_, begin_sql);
        open_ = !ec;
        return ec;
    }

    connection& conn_;
    bool open_ = false;
};

/// A write transaction (`BEGIN IMMEDIATE`) on a connection, rolled back unless committed.
class write_transaction : scoped_transaction {
public:
    explicit write_transaction(connection& c) noexcept
        : scoped_transaction(c) {}

    std::error_code begin() { return open("BEGIN IMMEDIATE"); }
    std::error_code commit() {
        auto ec = exec_cached(conn_, "COMMIT");
        if (ec)
            rollback_quietly(conn_);
        open_ = false;
        return ec;
    }
};

/// A read transaction (`BEGIN`), so that several SELECTs see one snapshot.
class read_transaction : scoped_transaction {
public:
    explicit read_transaction(connection& c) noexcept
        : scoped_transaction(c) {}

    std::error_code begin() { return open("BEGIN"); }
};

/// Runs `op` as one operation of `db` (retried while the database is busy): `op(c, result)`
/// computes a `Result` into `result` on the connection `c` and returns its error. Returns what
/// `op` computed, or `Result{}` on failure, with `ec` saying why (`errc::closed` without a
/// database): the shape of every store read that answers one value.
template <class Result, class Op>
Result run_for_result(database_state* db, std::error_code& ec, Op op) {
    ec.clear();
    if (!db) {
        ec = errc::closed;
        return Result{};
    }
    Result result{};
    ec = db->run([&](connection& c) -> std::error_code { return op(c, result); });
    return ec ? Result{} : result;
}

/// Runs `sql`, a write whose only parameter `?1` is the time `at`, in its own operation of
/// `db` (retried while the database is busy), and returns how many rows it changed: the shape
/// of every time-based clean-up (expired leases, retention purges). `errc::closed` without a
/// database; 0 on failure.
inline std::size_t count_changes_at(database_state* db, std::string_view sql, store_time at,
                                    std::error_code& ec) {
    return run_for_result<std::size_t>(db, ec,
                                       [&](connection& c, std::size_t& changed) -> std::error_code {
                                           std::error_code e;
                                           auto st = prepare_bound(c, sql, e, to_column(at));
                                           if (e)
                                               return e;
                                           if (auto failed = st->execute())
                                               return failed;
                                           changed = static_cast<std::size_t>(c.changes());
                                           return {};
                                       });
}

/// Runs `sql`, a query of one integer (`SELECT count(*) FROM ...`), in its own operation of
/// `db`, and returns that integer: the shape of every store's `size`. `errc::closed` without a
/// database; 0 on failure.
inline std::size_t count_rows(database_state* db, std::string_view sql, std::error_code& ec) {
    return run_for_result<std::size_t>(db, ec,
                                       [&](connection& c, std::size_t& n) -> std::error_code {
                                           std::error_code e;
                                           auto st = c.prepare(sql, e);
                                           if (e)
                                               return e;
                                           if (!st->step(e))
                                               return e ? e : make_error_code(errc::store_error);
                                           n = static_cast<std::size_t>(st->column_int64(0));
                                           return {};
                                       });
}

} // namespace letterbox::sqlite::detail
