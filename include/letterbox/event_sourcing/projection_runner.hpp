// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/checkpoint_store.hpp>
#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/event_store.hpp>
#include <letterbox/concepts/projection.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/error.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/event_sourcing/projection_batch.hpp>
#include <letterbox/event_sourcing/projection_options.hpp>
#include <letterbox/event_sourcing/projection_stats.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/message.hpp>
#include <letterbox/recorded_event.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Keeps a `projection` (a read model) up to date from an `event_store`: a catch-up
/// subscription over the global position, from a checkpoint kept in the read model's database.
///
/// - **Exactly once per event.** A batch of events is applied in one unit of work of the read
///   model, together with the move of the checkpoint from the position it was read at
///   (`checkpoint_store::save`); they commit together or not at all. Two runners of one
///   projection cannot both move it: the second's batch conflicts and rolls back
///   (`stats().conflicts`). Positions follow commit order (see `event_store`), so resuming
///   from the checkpoint misses nothing.
/// - **Woken, not polling.** `async_run` catches up when `notify()` is called: from the
///   append's `on_commit` in-process (`waker()`), or from a bus consumer of the published
///   events for appends in other processes. `projection_options::fallback_poll` adds a poll
///   only if asked.
/// - **Read-your-writes.** `async_wait(position, timeout, token)` completes once the
///   projection has reached `position` (an append's `append_result::position`), or with
///   `errc::timed_out` when the clock passes `timeout` first. It is woken by the runner's
///   progress, never by a timer loop.
/// - **Rebuild.** `reset()` empties the read model (`projection::reset`) and sets the
///   checkpoint back to 0 in one unit; the next catch-up rebuilds it from the first event.
/// - **Lag.** `stats()` reads the checkpoint and the store's head: the lag in events and in
///   time. `projection_options::on_batch` reports each batch with its commit time
///   (`ops::letterbox_metrics::projection_observer` turns it into a lag histogram).
///
/// The store calls run on the caller's thread (`step`, `catch_up`, `reset`, `stats`) or on a
/// strand of the executor given to the constructor (`async_run`): give it a thread pool, or any
/// executor whose threads may wait on a database, never the io_context of a transport.
/// `async_run` and `async_wait` follow Asio's conventions (`void(error_code)`, cancellation
/// through the token's slot, any completion token).
///
/// The runner must outlive its operations and every `waker()` it handed out. It is neither
/// copyable nor movable.
///
/// Example:
///
///     letterbox::projection_runner runner(pool.get_executor(), events, checkpoints, balances,
///                                         clock, {.name = "balances"});
///     runner.async_run(boost::asio::detached);
///     // The command side wakes it when its append commits:
///     uow.on_commit(runner.waker());
///     // A query that must see its own write waits for it, at most 2 s:
///     co_await runner.async_wait(appended.position, 2s, boost::asio::use_awaitable);
template <event_store Events, checkpoint_store Checkpoints, projection Projection, clock Clock>
    requires std::same_as<typename Checkpoints::unit_of_work_type,
                          typename Projection::unit_of_work_type>
class projection_runner {
public:
    using executor_type = boost::asio::strand<boost::asio::any_io_executor>;
    using duration = typename Clock::duration;

    /// A runner of `projection` over `events`, its checkpoint in `checkpoints` under
    /// `options.name`. The references must outlive the runner. Throws
    /// `letterbox::error(errc::invalid_argument)` for an empty name; a batch below 1 counts as 1.
    projection_runner(boost::asio::any_io_executor ex, Events& events, Checkpoints& checkpoints,
                      Projection& projection, Clock& clock, projection_options options)
        : strand_(boost::asio::make_strand(std::move(ex)))
        , events_(&events)
        , checkpoints_(&checkpoints)
        , projection_(&projection)
        , clock_(&clock)
        , options_(std::move(options))
        , run_timer_(clock.make_timer(strand_)) {
        if (options_.name.empty())
            throw error(errc::invalid_argument, "projection_runner: the projection has no name");
        options_.batch = std::max<std::size_t>(options_.batch, 1);
    }

    projection_runner(const projection_runner&) = delete;
    projection_runner& operator=(const projection_runner&) = delete;

    /// Applies the next batch of events after the checkpoint, with the checkpoint's move, in
    /// one unit; returns how many (0: none was left, or `ec` says why not). A conflict
    /// (`errc::concurrency_conflict`: another runner moved the checkpoint) or any other error
    /// applies nothing.
    std::size_t step(std::error_code& ec);

    /// Steps until the projection reaches the head the store had when it began, or a step
    /// fails (`ec`). Returns how many events it applied.
    std::size_t catch_up(std::error_code& ec);

    /// Empties the read model and sets the checkpoint back to 0, in one unit. The next
    /// catch-up rebuilds the read model from the first event.
    [[nodiscard]] std::error_code reset();

    /// The position this runner last saw committed (its own commits, and the checkpoints it
    /// read). What `async_wait` compares with.
    std::uint64_t position() const noexcept { return position_.load(std::memory_order_acquire); }

    /// The checkpoint, the head and the lag, read from the stores now; this runner's counts.
    projection_stats stats(std::error_code& ec);

    /// Says that events may have been appended: `async_run`, if running, catches up soon.
    /// Any thread; wakes coalesce.
    void notify() {
        if (!wake_posted_.exchange(true, std::memory_order_acq_rel))
            boost::asio::post(strand_, [this] {
                wake_posted_.store(false, std::memory_order_release);
                round();
            });
    }

    /// `notify`, as a function for a unit of work's `on_commit`.
    std::function<void()> waker() {
        return [this] {
            notify();
        };
    }

    /// Runs the projection until cancelled: a catch-up now, then one each time it is woken
    /// (`notify`), and each `fallback_poll` if set. A failed round is counted
    /// (`stats().errors`) and tried again after `retry_delay`. Completes with
    /// `void(error_code)`: `operation_aborted` when cancelled through the token's slot (any
    /// type), or `errc::invalid_state` when the runner already runs. Its pending wait does not
    /// keep `io_context::run()` from returning (it ends only when cancelled).
    template <class Token>
    auto async_run(Token&& token);

    /// Waits until the projection has reached `target` (an append's position), at most
    /// `timeout` on the runner's clock. Completes with `void(error_code)`: success,
    /// `errc::timed_out`, or `operation_aborted` when cancelled through the token's slot (any
    /// type). Completes at once when the position is already reached.
    template <class Token>
    auto async_wait(std::uint64_t target, duration timeout, Token&& token);

    /// The strand the runner's asynchronous work runs on.
    executor_type get_executor() const noexcept { return strand_; }

    const projection_options& options() const noexcept { return options_; }

private:
    using op_type = detail::async_op<void(error_code)>;
    using timer_type = decltype(std::declval<Clock&>().make_timer(std::declval<executor_type&>()));

    struct waiter {
        std::uint64_t target;
        op_type op;
        timer_type timer;
    };

    struct counts {
        std::atomic<std::uint64_t> applied{0}, batches{0}, conflicts{0}, errors{0};
    };

    // Counts a failed step or round; `ec` says which kind.
    void count_failure(const std::error_code& ec) {
        (ec == errc::concurrency_conflict ? counts_.conflicts : counts_.errors)
            .fetch_add(1, std::memory_order_relaxed);
    }

    // Asks the failpoint hook at `p` and throws `failpoint_halt` when it says so.
    void maybe_halt(failpoint p, const message_id& id) const {
        if constexpr (failpoints_enabled)
            if (options_.failpoint && options_.failpoint(p, id))
                throw failpoint_halt(p);
    }

    // Records a committed (or read) position and lets the strand complete the waiters it
    // satisfies. `lower` says the position may go down (a reset).
    void note_position(std::uint64_t p, bool lower = false) {
        if (lower) {
            position_.store(p, std::memory_order_release);
            return;
        }
        auto seen = position_.load();
        while (seen < p && !position_.compare_exchange_weak(seen, p))
            ;
        // Sequentially consistent with `async_wait`'s count-then-check: either it sees the new
        // position, or this sees its waiter. No post at all when no one waits.
        if (waiting_.load() > 0)
            boost::asio::post(strand_, [this] { complete_waiters(); });
    }

    // On the strand.
    void complete_waiters() {
        const auto at = position();
        std::vector<std::shared_ptr<waiter>> done;
        std::erase_if(waiters_, [&](const std::shared_ptr<waiter>& w) {
            if (w->target > at)
                return false;
            done.push_back(w);
            return true;
        });
        for (const auto& w : done) {
            waiting_.fetch_sub(1);
            w->timer.cancel();
            w->op(error_code{});
        }
    }

    // On the strand: removes `w` from the waiters; says whether it was there.
    bool forget(const std::shared_ptr<waiter>& w) {
        if (std::erase(waiters_, w) == 0)
            return false;
        waiting_.fetch_sub(1);
        return true;
    }

    // On the strand: one catch-up of `async_run`, then its next timer.
    void round();

    executor_type strand_;
    Events* events_;
    Checkpoints* checkpoints_;
    Projection* projection_;
    Clock* clock_;
    projection_options options_;
    std::atomic<std::uint64_t> position_{0};
    counts counts_;
    std::atomic<bool> wake_posted_{false};
    std::atomic<std::size_t> waiting_{0}; // waiters registered, or being registered
    // On the strand:
    timer_type run_timer_;
    std::optional<op_type> run_op_;
    std::vector<std::shared_ptr<waiter>> waiters_;
};

template <event_store Events, checkpoint_store Checkpoints, projection Projection, clock Clock>
    requires std::same_as<typename Checkpoints::unit_of_work_type,
                          typename Projection::unit_of_work_type>
        std::size_t
        projection_runner<Events, Checkpoints, Projection, Clock>::step(std::error_code& ec) {
        const auto from = checkpoints_->position(options_.name, ec);
        if (ec) {
            count_failure(ec);
            return 0;
        }
        const auto page = events_->read_all(from, options_.batch, ec);
        if (ec) {
            count_failure(ec);
            return 0;
        }
        if (page.empty()) {
            note_position(from);
            return 0;
        }
        {
            auto u = projection_->begin();
            for (const auto& e : page)
                if ((ec = projection_->apply(u, e))) {
                    count_failure(ec);
                    return 0; // `u` rolls back
                }
            if ((ec = checkpoints_->save(u, options_.name, from, page.back().position))) {
                count_failure(ec);
                return 0;
            }
            maybe_halt(failpoint::after_projection_apply_before_commit, page.back().id);
            if ((ec = u.commit())) {
                count_failure(ec);
                return 0;
            }
        }
        maybe_halt(failpoint::after_projection_commit_before_wake, page.back().id);
        counts_.applied.fetch_add(page.size(), std::memory_order_relaxed);
        counts_.batches.fetch_add(1, std::memory_order_relaxed);
        note_position(page.back().position);
        if (options_.on_batch)
            options_.on_batch(
                {options_.name, std::span<const recorded_event>(page), clock_->wall_now()});
        return page.size();
    }

template <event_store Events, checkpoint_store Checkpoints, projection Projection, clock Clock>
    requires std::same_as<typename Checkpoints::unit_of_work_type,
                          typename Projection::unit_of_work_type>
        std::size_t
        projection_runner<Events, Checkpoints, Projection, Clock>::catch_up(std::error_code& ec) {
        const auto head = events_->head_position(ec);
        if (ec) {
            count_failure(ec);
            return 0;
        }
        std::size_t applied = 0;
        // Each step moves the checkpoint forward or stops: at most (head - checkpoint) / batch + 1
        // steps.
        for (;;) {
            const auto n = step(ec);
            applied += n;
            if (ec || n == 0 || position() >= head)
                return applied;
        }
    }

template <event_store Events, checkpoint_store Checkpoints, projection Projection, clock Clock>
    requires std::same_as<typename Checkpoints::unit_of_work_type,
                          typename Projection::unit_of_work_type>
        std::error_code projection_runner<Events, Checkpoints, Projection, Clock>::reset() {
        std::error_code ec;
        const auto from = checkpoints_->position(options_.name, ec);
        if (ec)
            return ec;
        auto u = projection_->begin();
        if ((ec = projection_->reset(u)) || (ec = checkpoints_->save(u, options_.name, from, 0)) ||
            (ec = u.commit()))
            return ec;
        note_position(0, true);
        return {};
    }

template <event_store Events, checkpoint_store Checkpoints, projection Projection, clock Clock>
    requires std::same_as<typename Checkpoints::unit_of_work_type,
                          typename Projection::unit_of_work_type>
        projection_stats
        projection_runner<Events, Checkpoints, Projection, Clock>::stats(std::error_code& ec) {
        projection_stats s;
        s.applied = counts_.applied.load(std::memory_order_relaxed);
        s.batches = counts_.batches.load(std::memory_order_relaxed);
        s.conflicts = counts_.conflicts.load(std::memory_order_relaxed);
        s.errors = counts_.errors.load(std::memory_order_relaxed);
        s.position = checkpoints_->position(options_.name, ec);
        if (ec)
            return s;
        s.head = events_->head_position(ec);
        if (ec)
            return s;
        s.lag_events = s.head > s.position ? s.head - s.position : 0;
        if (s.lag_events == 0)
            return s;
        const auto next = events_->read_all(s.position, 1, ec);
        if (!ec && !next.empty())
            s.lag_time = std::max(store_time::duration::zero(),
                                  store_time(clock_->wall_now()) - next.front().recorded_at);
        return s;
    }

template <event_store Events, checkpoint_store Checkpoints, projection Projection, clock Clock>
    requires std::same_as<typename Checkpoints::unit_of_work_type,
                          typename Projection::unit_of_work_type>
void projection_runner<Events, Checkpoints, Projection, Clock>::round() {
    if (!run_op_ || run_op_->done())
        return;
    bool failed = false;
    try {
        std::error_code ec;
        catch_up(ec);
        failed = static_cast<bool>(ec);
    } catch (const failpoint_halt&) {
        throw; // the process "dies" here: out of io_context::run()
    } catch (const std::exception&) {
        counts_.errors.fetch_add(1, std::memory_order_relaxed);
        failed = true;
    }
    std::chrono::milliseconds next = failed ? options_.retry_delay : options_.fallback_poll;
    if (next.count() <= 0) {
        if (!failed)
            return; // woken only
        next = std::chrono::milliseconds(1);
    }
    run_timer_.expires_after(std::chrono::duration_cast<duration>(next));
    run_timer_.async_wait([this](error_code e) {
        if (!e)
            round();
    });
}

template <event_store Events, checkpoint_store Checkpoints, projection Projection, clock Clock>
    requires std::same_as<typename Checkpoints::unit_of_work_type,
                          typename Projection::unit_of_work_type>
template <class Token>
auto projection_runner<Events, Checkpoints, Projection, Clock>::async_run(Token&& token) {
    return detail::async_start<void(error_code), detail::outstanding_work::untracked>(
        std::forward<Token>(token), strand_, [this](op_type op) {
            if (run_op_ && !run_op_->done())
                return op(make_error_code(errc::invalid_state));
            run_op_.emplace(op);
            op.on_cancel(
                [this](const op_type& cancelled) {
                    run_timer_.cancel();
                    run_op_.reset();
                    cancelled.cancelled();
                },
                boost::asio::cancellation_type::all);
            round();
        });
}

template <event_store Events, checkpoint_store Checkpoints, projection Projection, clock Clock>
    requires std::same_as<typename Checkpoints::unit_of_work_type,
                          typename Projection::unit_of_work_type>
template <class Token>
auto projection_runner<Events, Checkpoints, Projection, Clock>::async_wait(std::uint64_t target,
                                                                           duration timeout,
                                                                           Token&& token) {
    return detail::async_start<void(error_code)>(
        std::forward<Token>(token), strand_, [this, target, timeout](op_type op) {
            waiting_.fetch_add(1);
            if (position_.load() >= target) {
                waiting_.fetch_sub(1);
                return op(error_code{});
            }
            auto w = std::make_shared<waiter>(waiter{target, op, clock_->make_timer(strand_)});
            waiters_.push_back(w);
            w->timer.expires_after(timeout);
            w->timer.async_wait([this, w](error_code e) {
                if (!e && forget(w))
                    w->op(make_error_code(errc::timed_out));
            });
            op.on_cancel(
                [this, w](const op_type& cancelled) {
                    forget(w);
                    w->timer.cancel();
                    cancelled.cancelled();
                },
                boost::asio::cancellation_type::all);
        });
}

} // namespace letterbox
