// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/detail/unique_function.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

template <class Executor>
class basic_virtual_timer;

/// A clock whose time moves only when told to: `advance`, `advance_to` or
/// `advance_to_next`. A model of `clock`, for deterministic tests and simulations.
///
/// Timers made by `make_timer` have the interface of Asio's `basic_waitable_timer`
/// (`expires_at`, `expires_after`, `cancel`, `async_wait` with any completion token). When the
/// clock passes a timer's expiry, the wait's handler is *posted* to its associated executor;
/// it runs when that executor runs. Pending virtual waits do not count as outstanding work:
/// `io_context::run` returns when only virtual timers remain, and the driver advances the clock
/// (a simulation jumps to `next_deadline()` when nothing is runnable). Remember that an
/// `io_context` whose `run` or `poll` returned for lack of work is stopped: call `restart()`
/// before polling it again.
///
/// Why not `asio::basic_waitable_timer<virtual_clock>`: Asio's timers call a *static*
/// `Clock::now()`, which would force global mutable time and couple every simulation in a
/// process. See docs/design/clock.md.
///
/// Thread safety: none. Use one virtual clock from one thread (the simulation's).
/// The clock must outlive its timers.
class virtual_clock {
public:
    using duration = std::chrono::nanoseconds;
    using time_point = std::chrono::time_point<virtual_clock, duration>;
    template <class Executor = boost::asio::any_io_executor>
    using timer_type = basic_virtual_timer<Executor>;

    /// 2026-01-01T00:00:00Z: the wall time that virtual time zero maps to by default.
    static constexpr std::chrono::sys_seconds default_wall_epoch{std::chrono::seconds{1767225600}};

    explicit virtual_clock(std::chrono::system_clock::time_point wall_epoch = default_wall_epoch)
        : wall_epoch_(wall_epoch) {}
    virtual_clock(const virtual_clock&) = delete;
    virtual_clock& operator=(const virtual_clock&) = delete;

    /// Drops the pending waits without running them. Each is taken out of the clock before it
    /// is destroyed: a handler may own its timer (a `shared_ptr` captured in the handler), and
    /// that timer's destructor cancels its waits through this clock.
    ~virtual_clock() {
        while (!waits_.empty())
            waits_.extract(waits_.begin()); // the node, and the wait in it, die here
    }

    time_point now() const noexcept { return now_; }

    /// The wall time corresponding to `now()`: the epoch plus the virtual time elapsed.
    std::chrono::system_clock::time_point wall_now() const noexcept {
        return wall_epoch_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                 now_.time_since_epoch());
    }

    /// Moves time forward by `d`, firing due waits in deadline order.
    void advance(duration d) { advance_to(now_ + d); }

    /// Moves time forward to `t` (never backwards), firing due waits in deadline order.
    void advance_to(time_point t) {
        while (!waits_.empty() && waits_.begin()->first.first <= t) {
            auto node = waits_.extract(waits_.begin());
            if (node.key().first > now_)
                now_ = node.key().first;
            node.mapped().fire(boost::system::error_code{});
        }
        if (t > now_)
            now_ = t;
    }

    /// Jumps to the earliest pending deadline and fires what is due then. Returns false, and
    /// leaves time alone, when no wait is pending.
    bool advance_to_next() {
        if (waits_.empty())
            return false;
        advance_to(waits_.begin()->first.first);
        return true;
    }

    /// The earliest pending deadline, if any.
    std::optional<time_point> next_deadline() const {
        if (waits_.empty())
            return std::nullopt;
        return waits_.begin()->first.first;
    }

    /// How many waits are pending.
    std::size_t pending() const noexcept { return waits_.size(); }

    /// A timer on this clock whose handlers run on `ex` (unless they carry their own executor).
    template <class Executor>
    timer_type<Executor> make_timer(const Executor& ex) {
        return timer_type<Executor>(ex, *this);
    }

private:
    template <class>
    friend class basic_virtual_timer;

    // Waits are ordered by (deadline, arrival), so equal deadlines fire in FIFO order: the
    // same schedule always gives the same trace.
    using key = std::pair<time_point, std::uint64_t>;
    struct wait {
        std::uint64_t timer_id;
        detail::unique_function<void(boost::system::error_code)> fire;
    };

    std::uint64_t new_timer_id() noexcept { return ++last_timer_id_; }

    key add_wait(time_point deadline, std::uint64_t timer_id,
                 detail::unique_function<void(boost::system::error_code)> fire) {
        key k{deadline, ++last_seq_};
        waits_.emplace(k, wait{timer_id, std::move(fire)});
        return k;
    }

    // One wait, cancelled through its operation's cancellation slot.
    void cancel_wait(const key& k) {
        if (auto it = waits_.find(k); it != waits_.end())
            waits_.extract(it).mapped().fire(boost::asio::error::operation_aborted);
    }

    std::size_t cancel_waits(std::uint64_t timer_id, std::vector<key>& keys) {
        std::size_t n = 0;
        for (const auto& k : keys) {
            auto it = waits_.find(k);
            if (it == waits_.end() || it->second.timer_id != timer_id)
                continue;
            auto node = waits_.extract(it);
            node.mapped().fire(boost::asio::error::operation_aborted);
            ++n;
        }
        keys.clear();
        return n;
    }

    std::chrono::system_clock::time_point wall_epoch_;
    time_point now_{};
    std::uint64_t last_seq_ = 0;
    std::uint64_t last_timer_id_ = 0;
    std::map<key, wait> waits_;
};

/// A timer on a `virtual_clock`, with the interface of Asio's `basic_waitable_timer`.
///
/// `async_wait` completes with `void(boost::system::error_code)`: success at expiry,
/// `operation_aborted` when cancelled (by `cancel`, `expires_at`, `expires_after` or
/// destruction). A wait on an expiry that has already passed completes at once (posted).
template <class Executor = boost::asio::any_io_executor>
class basic_virtual_timer {
public:
    using executor_type = Executor;
    using clock_type = virtual_clock;
    using duration = virtual_clock::duration;
    using time_point = virtual_clock::time_point;

    basic_virtual_timer(const Executor& ex, virtual_clock& clock)
        : ex_(ex)
        , clock_(&clock)
        , id_(clock.new_timer_id())
        , expiry_(clock.now()) {}

    basic_virtual_timer(basic_virtual_timer&& other) noexcept
        : ex_(std::move(other.ex_))
        , clock_(other.clock_)
        , id_(std::exchange(other.id_, 0))
        , expiry_(other.expiry_)
        , keys_(std::move(other.keys_)) {}
    basic_virtual_timer& operator=(basic_virtual_timer&&) = delete;
    basic_virtual_timer(const basic_virtual_timer&) = delete;
    basic_virtual_timer& operator=(const basic_virtual_timer&) = delete;

    ~basic_virtual_timer() {
        if (id_ != 0)
            cancel();
    }

    executor_type get_executor() const noexcept { return ex_; }
    time_point expiry() const noexcept { return expiry_; }

    /// Sets the expiry, cancelling pending waits; returns how many were cancelled.
    std::size_t expires_at(time_point t) {
        auto n = cancel();
        expiry_ = t;
        return n;
    }
    std::size_t expires_after(duration d) { return expires_at(clock_->now() + d); }

    /// Cancels pending waits (they complete with `operation_aborted`).
    std::size_t cancel() { return clock_->cancel_waits(id_, keys_); }

    /// Cancellation (the token's cancellation slot): `terminal`, `partial` and `total`, as an
    /// Asio timer; the wait completes with `operation_aborted`, as after `cancel()`, and the
    /// timer's other waits are left alone.
    template <class Token>
    auto async_wait(Token&& token) {
        // Untracked: the program advances the clock, not the executor, so a pending wait must
        // not keep `io_context::run()` from returning.
        return detail::async_start_here<void(boost::system::error_code),
                                        detail::outstanding_work::untracked>(
            std::forward<Token>(token), ex_,
            [this](detail::async_op<void(boost::system::error_code)> op) {
                if (expiry_ <= clock_->now())
                    return op(boost::system::error_code{});
                const auto k = clock_->add_wait(expiry_, id_, op);
                keys_.push_back(k);
                // The clock outlives its timers' waits (its destructor destroys them, and the
                // operation with them, which ends this hook's reach).
                op.on_cancel([clock = clock_, k](auto) { clock->cancel_wait(k); },
                             boost::asio::cancellation_type::all);
            });
    }

private:
    Executor ex_;
    virtual_clock* clock_;
    std::uint64_t id_;
    time_point expiry_;
    std::vector<virtual_clock::key> keys_;
};

} // namespace letterbox
