// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/postgres/connection.hpp>
#include <letterbox/postgres/detail/database_state.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

class database;

/// A PostgreSQL transaction (`BEGIN` ... `COMMIT`) that models `letterbox::unit_of_work` and
/// `letterbox::savepoint_unit_of_work`: the caller's business writes, `outbox_store::add` and
/// `inbox_store::try_record` all run on its connection, so they commit together or not at all.
///
/// Begun by `database::begin()`, which lends it a connection of the pool until it is destroyed.
/// Unlike SQLite, units run at the same time: they wait for each other only on the rows (and
/// the aggregates' order locks) they both write.
///
/// - `commit()` commits; the `on_commit` callbacks then run, in registration order. A failed
///   `COMMIT` is reported with its code: `errc::store_serialization_failure` or
///   `errc::store_deadlock` (nothing was written: run the whole unit again, as the caller's retry
///   policy decides; letterbox never retries it behind the caller's back), or
///   `errc::store_connection_lost` (the outcome is unknown: the relay and the inbox make a
///   retried unit safe).
/// - A business write that failed on `connection()` fails the transaction on the server: the
///   server refuses every later statement, and `commit()` then rolls back and returns
///   `errc::store_error` (never success), even if the caller ignored the first error.
/// - `rollback()`, or destroying an open unit (an exception, an early return), rolls back.
/// - After either, the unit is finished: everything returns `errc::transaction_closed`.
/// - A store write that hits a database error fails the unit: further store writes and
///   `commit()` return that error. A refused write (`errc::duplicate_message_id`,
///   `errc::already_processed`, `errc::payload_malformed`) leaves the unit usable: the stores
///   refuse without a server error (`ON CONFLICT DO NOTHING`).
///
/// Thread safety: one thread at a time, like the connection it holds.
///
/// Example:
///
///     std::error_code ec;
///     auto uow = db.begin(ec);
///     if (ec) return ec;
///     uow.connection().exec("UPDATE account SET balance = balance - 10 WHERE id = $1",
///                           {letterbox::postgres::param::text(id)}, ec);
///     if (ec) return ec; // the unit rolls back when destroyed
///     if (auto e = outbox.add(uow, {msg, "account", id}, clock.wall_now()))
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
        , open_(std::exchange(other.open_, false)) {}
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
        }
        return *this;
    }
    unit_of_work(const unit_of_work&) = delete;
    unit_of_work& operator=(const unit_of_work&) = delete;
    /// Rolls back if neither `commit()` nor `rollback()` was called.
    ~unit_of_work() { finish_quietly(); }

    /// Commits, then runs the `on_commit` callbacks in order. Returns
    /// `errc::transaction_closed` if the unit is already finished, the failure of a store write,
    /// `errc::store_error` if a business write failed the transaction, or the error of the
    /// `COMMIT`. Either way the unit is finished afterwards. An exception thrown by a callback
    /// propagates after the commit; the remaining callbacks do not run.
    [[nodiscard]] std::error_code commit() {
        if (!open_)
            return errc::transaction_closed;
        open_ = false;
        auto callbacks = std::move(callbacks_);
        callbacks_.clear();
        marks_.clear();
        if (failure_) {
            rollback_quietly();
            return failure_;
        }
        if (conn_->in_failed_transaction()) {
            db_->record_error("COMMIT refused: a statement of the unit of work failed (" +
                              conn_->last_error_message() + "); rolled back");
            rollback_quietly();
            return errc::store_error;
        }
        if (auto ec = conn_->exec("COMMIT")) {
            db_->record_error(conn_->last_error_message());
            rollback_quietly();
            return ec;
        }
        conn_ = {}; // back to the pool before the callbacks, which may begin units
        for (auto& f : callbacks)
            f();
        return {};
    }
    /// Rolls back and discards the callbacks. Returns `errc::transaction_closed` if the unit
    /// is already finished.
    [[nodiscard]] std::error_code rollback() {
        if (!open_)
            return errc::transaction_closed;
        open_ = false;
        callbacks_.clear();
        marks_.clear();
        std::error_code ec;
        if (conn_ && conn_->in_transaction())
            ec = conn_->exec("ROLLBACK");
        conn_ = {};
        return failure_ || ec == errc::store_connection_lost ? std::error_code{} : ec;
    }
    /// Registers `f` to run after a successful commit. Returns `errc::transaction_closed` if the
    /// unit is finished (then `f` never runs).
    [[nodiscard]] std::error_code on_commit(std::function<void()> f) {
        if (!open_)
            return errc::transaction_closed;
        callbacks_.push_back(std::move(f));
        return {};
    }
    /// Marks a savepoint (`SAVEPOINT`): what is written after it can be discarded by
    /// `rollback_to_savepoint()` (which also clears a failed business statement's error) or kept
    /// by `release_savepoint()`. Marks nest.
    [[nodiscard]] std::error_code savepoint() {
        if (auto ec = writable())
            return ec;
        if (auto ec = conn_->exec("SAVEPOINT letterbox_" + std::to_string(marks_.size())))
            return fail_and_report(ec);
        marks_.push_back(callbacks_.size());
        return {};
    }
    /// Keeps what was written since the latest mark (`RELEASE`), and ends the mark.
    [[nodiscard]] std::error_code release_savepoint() {
        if (auto ec = writable())
            return ec;
        if (marks_.empty())
            return errc::precondition_failed;
        if (auto ec =
                conn_->exec("RELEASE SAVEPOINT letterbox_" + std::to_string(marks_.size() - 1)))
            return fail_and_report(ec);
        marks_.pop_back();
        return {};
    }
    /// Discards what was written since the latest mark, and the `on_commit` callbacks
    /// registered since (`ROLLBACK TO`, then `RELEASE`); the unit stays open.
    [[nodiscard]] std::error_code rollback_to_savepoint() {
        if (auto ec = writable())
            return ec;
        if (marks_.empty())
            return errc::precondition_failed;
        const std::string name = "letterbox_" + std::to_string(marks_.size() - 1);
        if (auto ec = conn_->exec("ROLLBACK TO SAVEPOINT " + name))
            return fail_and_report(ec);
        if (auto ec = conn_->exec("RELEASE SAVEPOINT " + name))
            return fail_and_report(ec);
        callbacks_.resize(marks_.back());
        marks_.pop_back();
        return {};
    }

    /// Whether neither `commit()` nor `rollback()` has been called.
    bool is_open() const noexcept { return open_; }

    /// The connection that runs this unit's transaction: run business writes on it so they
    /// commit with the outbox and inbox writes. Precondition: `is_open()`. Do not begin, commit
    /// or roll back transactions on it yourself, and do not keep it beyond the unit.
    postgres::connection& connection() noexcept {
        LETTERBOX_ASSERT(open_ && conn_);
        return *conn_;
    }

    // --- For store implementations -----------------------------------------------------------

    /// Whether a store of the database `db` may write into this unit: success, or
    /// `errc::transaction_closed` (finished), the unit's failure, or
    /// `errc::precondition_failed` (the unit belongs to another database).
    [[nodiscard]] std::error_code check_writable(const detail::database_state& db) const noexcept {
        if (auto ec = writable())
            return ec;
        if (db_.get() != &db)
            return errc::precondition_failed;
        return {};
    }
    /// Fails the unit after a store write hit the database error `ec`: rolls the transaction
    /// back now (releasing its locks) and makes later writes and `commit()` report `ec`.
    /// Business writes still made on `connection()` run in a read-only transaction, so they
    /// fail (`errc::store_readonly`) and nothing of them survives the unit.
    void fail(std::error_code ec) noexcept {
        if (!open_ || failure_)
            return;
        failure_ = ec;
        if (db_ && conn_)
            db_->record_error(conn_->last_error_message());
        rollback_quietly();
        if (conn_ && !conn_->is_broken())
            (void)conn_->exec("BEGIN READ ONLY");
    }

private:
    friend class database;
    unit_of_work(std::shared_ptr<detail::database_state> db,
                 detail::pooled_connection conn) noexcept
        : db_(std::move(db))
        , conn_(std::move(conn))
        , open_(true) {}

    std::error_code writable() const noexcept {
        if (!open_)
            return errc::transaction_closed;
        if (failure_)
            return failure_;
        return {};
    }
    std::error_code fail_and_report(std::error_code ec) noexcept {
        fail(ec);
        return ec;
    }
    void rollback_quietly() noexcept {
        if (conn_ && conn_->in_transaction())
            (void)conn_->exec("ROLLBACK"); // a broken connection is closed by the pool
    }
    void finish_quietly() noexcept {
        if (open_) {
            open_ = false;
            callbacks_.clear();
            marks_.clear();
            rollback_quietly();
        }
        conn_ = {};
    }

    std::shared_ptr<detail::database_state> db_;
    detail::pooled_connection conn_;
    std::vector<std::function<void()>> callbacks_;
    std::vector<std::size_t> marks_; // per savepoint: how many callbacks were registered then
    std::error_code failure_;
    bool open_ = false;
};

} // namespace letterbox::postgres
