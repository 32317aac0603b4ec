// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

namespace detail {

/// Beast-style fault injection shared by the in-memory stores: operation number `n` (counted
/// from 0 when `fail_nth` is called) fails once with the chosen error.
class fault_counter {
public:
    /// Counts one operation; returns the injected error if this is the one to fail.
    [[nodiscard]] std::error_code next() {
        const std::size_t index = count_++;
        if (fail_at_ && *fail_at_ == index) {
            fail_at_.reset();
            return error_;
        }
        return {};
    }
    void fail_nth(std::size_t n, std::error_code ec) {
        fail_at_ = count_ + n;
        error_ = ec;
    }
    std::size_t count() const noexcept { return count_; }

private:
    std::size_t count_ = 0;
    std::optional<std::size_t> fail_at_;
    std::error_code error_;
};

/// The part of an in-memory store that takes part in a unit of work's commit: its mutex and
/// its fault counter. A commit counts as one operation of each store it writes to.
struct in_memory_participant {
    std::mutex mutex;
    fault_counter faults;
};

} // namespace detail

/// A unit of work for the in-memory stores: it stages writes and applies them all, or none, on
/// `commit()`. One unit can span an `in_memory_inbox_store` and an `in_memory_outbox_store`,
/// as the idempotent consumer needs (inbox record and outgoing events in one transaction).
///
/// `commit()` locks every store the unit wrote to, in address order so that concurrent
/// commits cannot deadlock; validates every staged write against the committed state (inbox
/// keys, outbox message ids) and fails with the first violation, applying nothing; otherwise
/// applies every write and unlocks; then runs the `on_commit` callbacks in registration order.
/// So commits are atomic with respect to each other and to every store operation, and a key
/// recorded by two concurrent units is committed by exactly one of them.
///
/// Not durable, not for distributed use: it models a database transaction in one process.
/// The stores written to must outlive the unit.
///
/// Thread safety: one unit is used by one thread at a time; distinct units and the stores can
/// be used concurrently.
class in_memory_unit_of_work {
public:
    /// Begins a unit of work. Nothing is locked until `commit()`.
    in_memory_unit_of_work() = default;

    in_memory_unit_of_work(const in_memory_unit_of_work&) = delete;
    in_memory_unit_of_work& operator=(const in_memory_unit_of_work&) = delete;

    /// Takes over `other`'s staged writes and callbacks; `other` becomes finished.
    in_memory_unit_of_work(in_memory_unit_of_work&& other) noexcept;
    /// Rolls back this unit if it is open, then takes over `other`'s writes.
    in_memory_unit_of_work& operator=(in_memory_unit_of_work&& other) noexcept;

    /// Rolls back if neither `commit()` nor `rollback()` was called.
    ~in_memory_unit_of_work() = default;

    /// Applies every staged write atomically, then runs the `on_commit` callbacks.
    ///
    /// Returns `errc::transaction_closed` if the unit is already finished, or the first
    /// validation failure (`errc::already_processed`, `errc::duplicate_message_id`, or an error
    /// injected with a store's `fail_nth`), in which case nothing was applied. Either way the
    /// unit is finished afterwards. An exception thrown by a callback propagates after the
    /// writes were applied; the remaining callbacks do not run.
    [[nodiscard]] std::error_code commit();

    /// Discards the staged writes and callbacks. Returns `errc::transaction_closed` if the
    /// unit is already finished.
    [[nodiscard]] std::error_code rollback();

    /// Registers `f` to run after a successful commit. Returns `errc::transaction_closed` if
    /// the unit is already finished (then `f` never runs).
    [[nodiscard]] std::error_code on_commit(std::function<void()> f);

    /// Marks a savepoint (`savepoint_unit_of_work`): what is staged after it can be discarded
    /// by `rollback_to_savepoint()` or kept by `release_savepoint()`. Marks nest.
    [[nodiscard]] std::error_code savepoint();
    /// Keeps what was staged since the latest mark, and ends the mark.
    [[nodiscard]] std::error_code release_savepoint();
    /// Discards the writes and callbacks staged since the latest mark, and ends the mark; the
    /// unit stays open.
    [[nodiscard]] std::error_code rollback_to_savepoint();

    /// Whether neither `commit()` nor `rollback()` has been called.
    bool is_open() const noexcept { return open_; }

    /// The number of staged writes.
    std::size_t staged() const noexcept { return writes_.size(); }

    // --- For in-memory store implementations -----------------------------------------------

    /// Stages one write of `store`. `key` identifies it among the writes of that store in this
    /// unit (see `has_staged`). At commit, `validate` runs under the store's mutex and may
    /// refuse the whole commit; then `apply` runs under the same lock and must not fail.
    /// Returns `errc::transaction_closed` if the unit is finished.
    [[nodiscard]] std::error_code stage(detail::in_memory_participant& store, std::string key,
                                        std::function<std::error_code()> validate,
                                        std::function<void()> apply);

    /// Whether `store` already staged a write with `key` in this unit.
    bool has_staged(const detail::in_memory_participant& store, std::string_view key) const;

    /// How many writes `store` staged with `key` in this unit (0 after a rollback to a
    /// savepoint discarded them).
    std::size_t count_staged(const detail::in_memory_participant& store,
                             std::string_view key) const;

private:
    struct staged_write {
        detail::in_memory_participant* store;
        std::string key;
        std::function<std::error_code()> validate;
        std::function<void()> apply;
    };

    void discard() noexcept;

    // A savepoint: how many writes and callbacks were staged when it was marked.
    struct mark {
        std::size_t writes;
        std::size_t callbacks;
    };

    std::vector<staged_write> writes_;
    std::vector<std::function<void()>> callbacks_;
    std::vector<mark> marks_;
    bool open_ = true;
};

inline in_memory_unit_of_work::in_memory_unit_of_work(in_memory_unit_of_work&& other) noexcept
    : writes_(std::move(other.writes_))
    , callbacks_(std::move(other.callbacks_))
    , marks_(std::move(other.marks_))
    , open_(std::exchange(other.open_, false)) {
    other.discard();
}

inline in_memory_unit_of_work&
in_memory_unit_of_work::operator=(in_memory_unit_of_work&& other) noexcept {
    if (this != &other) {
        discard();
        writes_ = std::move(other.writes_);
        callbacks_ = std::move(other.callbacks_);
        marks_ = std::move(other.marks_);
        open_ = std::exchange(other.open_, false);
        other.discard();
    }
    return *this;
}

inline std::error_code in_memory_unit_of_work::commit() {
    if (!open_)
        return errc::transaction_closed;
    open_ = false;

    // Lock every participating store, each once, in address order: two units spanning the
    // same stores lock them in the same order, so concurrent commits cannot deadlock.
    std::vector<detail::in_memory_participant*> stores;
    for (const auto& w : writes_)
        stores.push_back(w.store);
    std::sort(stores.begin(), stores.end(), std::less<>{});
    stores.erase(std::unique(stores.begin(), stores.end()), stores.end());
    std::vector<std::unique_lock<std::mutex>> locks;
    locks.reserve(stores.size());
    for (auto* s : stores)
        locks.emplace_back(s->mutex);

    // Validate everything before applying anything: all or nothing.
    std::error_code ec;
    for (auto* s : stores)
        if (!ec)
            ec = s->faults.next();
    for (const auto& w : writes_)
        if (!ec && w.validate)
            ec = w.validate();
    if (ec) {
        locks.clear();
        discard();
        return ec;
    }
    for (auto& w : writes_)
        w.apply();
    locks.clear();

    auto callbacks = std::move(callbacks_);
    discard();
    for (auto& f : callbacks)
        f();
    return {};
}

inline std::error_code in_memory_unit_of_work::rollback() {
    if (!open_)
        return errc::transaction_closed;
    open_ = false;
    discard();
    return {};
}

inline std::error_code in_memory_unit_of_work::on_commit(std::function<void()> f) {
    if (!open_)
        return errc::transaction_closed;
    callbacks_.push_back(std::move(f));
    return {};
}

inline std::error_code in_memory_unit_of_work::savepoint() {
    if (!open_)
        return errc::transaction_closed;
    marks_.push_back({writes_.size(), callbacks_.size()});
    return {};
}

inline std::error_code in_memory_unit_of_work::release_savepoint() {
    if (!open_)
        return errc::transaction_closed;
    if (marks_.empty())
        return errc::precondition_failed;
    marks_.pop_back();
    return {};
}

inline std::error_code in_memory_unit_of_work::rollback_to_savepoint() {
    if (!open_)
        return errc::transaction_closed;
    if (marks_.empty())
        return errc::precondition_failed;
    const mark m = marks_.back();
    marks_.pop_back();
    writes_.erase(writes_.begin() + static_cast<std::ptrdiff_t>(m.writes), writes_.end());
    callbacks_.erase(callbacks_.begin() + static_cast<std::ptrdiff_t>(m.callbacks),
                     callbacks_.end());
    return {};
}

inline std::error_code in_memory_unit_of_work::stage(detail::in_memory_participant& store,
                                                     std::string key,
                                                     std::function<std::error_code()> validate,
                                                     std::function<void()> apply) {
    if (!open_)
        return errc::transaction_closed;
    writes_.push_back({&store, std::move(key), std::move(validate), std::move(apply)});
    return {};
}

inline bool in_memory_unit_of_work::has_staged(const detail::in_memory_participant& store,
                                               std::string_view key) const {
    return std::any_of(writes_.begin(), writes_.end(),
                       [&](const staged_write& w) { return w.store == &store && w.key == key; });
}

inline std::size_t in_memory_unit_of_work::count_staged(const detail::in_memory_participant& store,
                                                        std::string_view key) const {
    return static_cast<std::size_t>(
        std::count_if(writes_.begin(), writes_.end(),
                      [&](const staged_write& w) { return w.store == &store && w.key == key; }));
}

inline void in_memory_unit_of_work::discard() noexcept {
    writes_.clear();
    callbacks_.clear();
    marks_.clear();
}

} // namespace letterbox
