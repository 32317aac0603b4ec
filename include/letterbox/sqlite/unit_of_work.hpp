// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/detail/database_state.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::sqlite {

class database;

/// An SQLite transaction (`BEGIN IMMEDIATE` ... `COMMIT`) that models `letterbox::unit_of_work`:
/// the caller's business writes, `outbox_store::add` and `inbox_store::try_record` all run on
/// its connection, so they commit together or not at all.
///
/// Begun by `database::begin()`, which takes a connection from the pool (the unit gives it back
/// when it is destroyed) and holds the database's write lock from `BEGIN IMMEDIATE` until the
/// unit finishes. So **one unit is open
/// per database file at a time**: another `begin()`, or a store operation that writes, waits
/// for it (up to the busy timeout and the bounded retries), and a store operation called on
/// the thread that holds an open unit waits for that very unit. Reads (`find`, `list`,
/// `stats`, `contains`, `size`) do not wait (WAL) and see committed rows only. Keep units
/// short.
///
/// - `commit()` commits; the `on_commit` callbacks then run, in registration order, once the
///   write lock is released (they may use the stores and begin units). A failed `COMMIT`
///   (disk full, I/O error, ...) is rolled back and reported with its `errc::store_*` code.
/// - `rollback()`, or destroying an open unit (an exception, an early return), rolls back.
/// - After either, the unit is finished: everything returns `errc::transaction_closed`.
/// - When a store write into the unit hits a database error (`errc::store_full`,
///   `errc::store_io_error`, ...), the whole transaction is rolled back at once, releasing the
///   lock, and the unit is failed: further store writes and `commit()` return that error, and
///   business writes still made on `connection()` are discarded when the unit finishes.
///   A refused write (`errc::duplicate_message_id`, `errc::already_processed`,
///   `errc::payload_malformed`) leaves the unit usable.
///
/// Thread safety: one thread at a time, like the connection it holds.
///
/// Example:
///
///     std::error_code ec;
///     auto uow = db.begin(ec);
///     if (ec) return ec; // errc::store_busy: the database stayed locked
///     if (auto e = uow.connection().exec("UPDATE account SET balance = balance - 10"))
///         return e; // the unit rolls back when destroyed
///     if (auto e = outbox.add(uow, {msg, "account", "7"}, clock.wall_now()))
///         return e;
///     if (auto e = uow.on_commit([&relay] { relay.wake(); }))
///         return e;
///     return uow.commit();
class unit_of_work {
public:
    /// A finished unit that holds nothing (what a failed `database::begin` returns).
    unit_of_work() noexcept = default;

    /// Takes over `other`'s transaction and callbacks; `other` becomes finished.
    unit_of_work(unit_of_work&& other) noexcept
        : db_(std::move(other.db_))
        , conn_(std::move(other.conn_))
        , callbacks_(std::move(other.callbacks_))
        , marks_(std::move(other.marks_))
        , failure_(std::exchange(other.failure_, {}))
        , open_(std::exchange(other.open_, false))
        , read_only_(std::exchange(other.read_only_, false)) {}
    /// Rolls back this unit if it is open, then takes over `other`'s transaction.
    unit_of_work& operator=(unit_of_work&& other) noexcept {
        if (this != &other) {
            finish_quietly();
            db_ = std::move(other.db_);
            conn_ = std::move(other.conn_);
            callbacks_ = std::move(other.callbacks_);
            marks_ = std::move(other.marks_);
            failure_ = std::exchange(other.failure_, {});
            open_ = std::exchange(other.open_, false);
            read_only_ = std::exchange(other.read_only_, false);
        }
        return *this;
    }
    unit_of_work(const unit_of_work&) = delete;
    unit_of_work& operator=(const unit_of_work&) = delete;

    /// Rolls back if neither `commit()` nor `rollback()` was called.
    ~unit_of_work() { finish_quietly(); }

    /// Commits, then runs the `on_commit` callbacks in order.
    ///
    /// Returns `errc::transaction_closed` if the unit is already finished; the error of a
    /// failed store write (the unit was failed, nothing is committed); or the error of a failed
    /// `COMMIT`, after rolling back. Either way the unit is finished afterwards. An exception
    /// thrown by a callback propagates after the commit; the remaining callbacks do not run.
    [[nodiscard]] std::error_code commit();

    /// Rolls back and discards the callbacks. Returns `errc::transaction_closed` if the unit
    /// is already finished.
    [[nodiscard]] std::error_code rollback();

    /// Registers `f` to run after a successful commit (to wake a relay, say). Returns
    /// `errc::transaction_closed` if the unit is finished (then `f` never runs).
    [[nodiscard]] std::error_code on_commit(std::function<void()> f);

    /// Marks a savepoint (`SAVEPOINT`, `letterbox::savepoint_unit_of_work`): what is written
    /// after it, on `connection()` and by the stores, can be discarded by
    /// `rollback_to_savepoint()` or kept by `release_savepoint()`. Marks nest. Returns the
    /// unit's failure if a store write already rolled it back, or the database's error.
    [[nodiscard]] std::error_code savepoint();
    /// Keeps what was written since the latest mark (`RELEASE`), and ends the mark.
    [[nodiscard]] std::error_code release_savepoint();
    /// Discards what was written since the latest mark, and the `on_commit` callbacks
    /// registered since (`ROLLBACK TO`, then `RELEASE`); the unit stays open.
    [[nodiscard]] std::error_code rollback_to_savepoint();

    /// Whether neither `commit()` nor `rollback()` has been called.
    bool is_open() const noexcept { return open_; }

    /// The connection that runs this unit's transaction: run business writes on it so they
    /// commit with the outbox and inbox writes. Precondition: `is_open()`. Do not begin,
    /// commit or roll back transactions on it yourself, and do not keep it, or statements
    /// borrowed from it, beyond the unit (the unit gives it back to the pool when destroyed).
    sqlite::connection& connection() noexcept {
        LETTERBOX_ASSERT(open_ && conn_);
        return *conn_;
    }

    // --- For store implementations -----------------------------------------------------------

    /// Whether a store of the database `db` may write into this unit: success, or
    /// `errc::transaction_closed` (finished), the unit's failure (see above), or
    /// `errc::precondition_failed` (the unit belongs to another database).
    [[nodiscard]] std::error_code check_writable(const detail::database_state& db) const noexcept {
        if (!open_)
            return errc::transaction_closed;
        if (failure_)
            return failure_;
        if (db_.get() != &db)
            return errc::precondition_failed;
        return {};
    }

    /// Fails the unit after a store write hit the database error `ec`: rolls the transaction
    /// back now and makes later writes and `commit()` report `ec`.
    void fail(std::error_code ec) noexcept;

private:
    friend class database;

    unit_of_work(std::shared_ptr<detail::database_state> db,
                 detail::pooled_connection conn) noexcept
        : db_(std::move(db))
        , conn_(std::move(conn))
        , open_(true) {}

    void finish_quietly() noexcept;

    std::shared_ptr<detail::database_state> db_; // keeps the pool alive while the unit holds a
                                                 // connection
    detail::pooled_connection conn_;
    std::vector<std::function<void()>> callbacks_;
    std::vector<std::size_t> marks_; // per savepoint: how many callbacks were registered then
    std::error_code failure_;
    bool open_ = false;
    /// The connection was made `query_only` because no transaction could be opened after a
    /// failure; finishing the unit restores it.
    bool read_only_ = false;
};

inline std::error_code unit_of_work::commit() {
    if (!open_)
        return errc::transaction_closed;
    open_ = false;
    auto callbacks = std::move(callbacks_);
    callbacks_.clear();
    marks_.clear();
    // The connection stays with the unit until it is destroyed: statements the caller borrowed
    // from it may still be alive, and must not be reset on a connection another thread uses.
    if (failure_) {
        detail::rollback_quietly(*conn_);
        return failure_;
    }
    if (auto ec = detail::exec_cached(*conn_, "COMMIT")) {
        db_->record_error(*conn_);
        detail::rollback_quietly(*conn_);
        return ec;
    }
    for (auto& f : callbacks)
        f();
    return {};
}

inline std::error_code unit_of_work::rollback() {
    if (!open_)
        return errc::transaction_closed;
    open_ = false;
    callbacks_.clear();
    marks_.clear();
    std::error_code ec;
    if (conn_->in_transaction()) {
        ec = detail::exec_cached(*conn_, "ROLLBACK");
        if (ec)
            db_->record_error(*conn_); // the pool closes a connection left in a transaction
    }
    return failure_ ? std::error_code{} : ec;
}

inline std::error_code unit_of_work::on_commit(std::function<void()> f) {
    if (!open_)
        return errc::transaction_closed;
    callbacks_.push_back(std::move(f));
    return {};
}

inline std::error_code unit_of_work::savepoint() {
    if (!open_)
        return errc::transaction_closed;
    if (failure_)
        return failure_;
    if (auto ec = detail::exec_cached(*conn_, "SAVEPOINT letterbox")) {
        db_->record_error(*conn_);
        return ec;
    }
    marks_.push_back(callbacks_.size());
    return {};
}

inline std::error_code unit_of_work::release_savepoint() {
    if (!open_)
        return errc::transaction_closed;
    if (marks_.empty())
        return errc::precondition_failed;
    marks_.pop_back();
    if (failure_)
        return failure_;
    if (auto ec = detail::exec_cached(*conn_, "RELEASE letterbox")) {
        fail(ec); // what was written since the mark would otherwise stay: give it all up
        return ec;
    }
    return {};
}

inline std::error_code unit_of_work::rollback_to_savepoint() {
    if (!open_)
        return errc::transaction_closed;
    if (marks_.empty())
        return errc::precondition_failed;
    callbacks_.resize(marks_.back());
    marks_.pop_back();
    if (failure_)
        return failure_;
    // The mark stays after `ROLLBACK TO`: `RELEASE` ends it, keeping nothing written since.
    std::error_code ec = detail::exec_cached(*conn_, "ROLLBACK TO letterbox");
    if (!ec)
        ec = detail::exec_cached(*conn_, "RELEASE letterbox");
    if (ec)
        fail(ec); // the transaction is in an unknown state: give it up as a whole
    return ec;
}

inline void unit_of_work::fail(std::error_code ec) noexcept {
    if (!open_ || failure_)
        return;
    failure_ = ec ? ec : make_error_code(errc::store_error);
    if (db_ && conn_) {
        db_->record_error(*conn_);
        detail::rollback_quietly(*conn_);
        // Business writes the caller still makes on connection() must not autocommit: give
        // them a transaction that finishing the unit rolls back.
        // If even that fails, refuse them: the connection turns query_only until the unit ends.
        try {
            if (detail::exec_cached(*conn_, "BEGIN"))
                read_only_ = !detail::exec_cached(*conn_, "PRAGMA query_only = 1");
        } catch (...) {
        }
    }
}

inline void unit_of_work::finish_quietly() noexcept {
    if (open_) {
        open_ = false;
        if (conn_)
            detail::rollback_quietly(*conn_);
    }
    if (read_only_ && conn_) {
        read_only_ = false;
        bool restored = false;
        try {
            restored = !detail::exec_cached(*conn_, "PRAGMA query_only = 0");
        } catch (...) {
        }
        if (!restored)
            conn_.discard(); // never hand a read-only connection to the next unit
    }
    callbacks_.clear();
    marks_.clear();
    conn_.reset();
    db_.reset();
}

} // namespace letterbox::sqlite
