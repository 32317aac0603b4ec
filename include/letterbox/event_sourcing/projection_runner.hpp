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
#include <mutex>
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
/// Lifetime: the runner keeps its state in a shared object that its pending work holds, so
/// destroying it is safe while work is queued: its pending operations then complete with
/// `operation_aborted` on its strand, and a `waker()` that outlives it does nothing. What it
/// reads and writes (the stores, the projection, the clock) must outlive every round in
/// progress: cancel `async_run` and wait for its completion before destroying them. It is
/// neither copyable nor movable.
///
/// `reset()` may run while the runner runs: a batch committed before the reset does not count
/// towards `position()` afterwards, and a checkpoint found below `position()` (another process
/// reset it) lowers it.
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
    struct core;

public:
    using executor_type = boost::asio::strand<boost::asio::any_io_executor>;
    using duration = typename Clock::duration;

    /// A runner of `projection` over `events`, its checkpoint in `checkpoints` under
    /// `options.name`. The references must outlive the runner's rounds. Throws
    /// `letterbox::error(errc::invalid_argument)` for an empty name; a batch below 1 counts as 1.
    projection_runner(boost::asio::any_io_executor ex, Events& events, Checkpoints& checkpoints,
                      Projection& projection, Clock& clock, projection_options options) {
        if (options.name.empty())
            throw error(errc::invalid_argument, "projection_runner: the projection has no name");
        options.batch = std::max<std::size_t>(options.batch, 1);
        core_ = std::make_shared<core>(boost::asio::make_strand(std::move(ex)), events, checkpoints,
                                       projection, clock, std::move(options));
    }

    /// Completes the pending operations with `operation_aborted`, on the strand.
    ~projection_runner() {
        core_->closed.store(true);
        boost::asio::post(core_->strand, [c = core_] { c->shut_down(); });
    }

    projection_runner(const projection_runner&) = delete;
    projection_runner& operator=(const projection_runner&) = delete;

    /// Applies the next batch of events after the checkpoint, with the checkpoint's move, in
    /// one unit; returns how many (0: none was left, or `ec` says why not). A conflict
    /// (`errc::concurrency_conflict`: another runner moved the checkpoint) or any other error
    /// applies nothing. A checkpoint beyond the event store's head (a read model built from
    /// another store, or an event store restored from an older backup) is
    /// `errc::invalid_state`.
    std::size_t step(std::error_code& ec) { return core_->step(ec); }

    /// Steps until the projection reaches the head the store had when it began, or a step
    /// fails (`ec`). Returns how many events it applied.
    std::size_t catch_up(std::error_code& ec) { return core_->catch_up(ec); }

    /// Empties the read model and sets the checkpoint back to 0, in one unit. The next
    /// catch-up rebuilds the read model from the first event.
    [[nodiscard]] std::error_code reset() { return core_->reset(); }

    /// The position this runner last saw committed (its own commits, and the checkpoints it
    /// read). What `async_wait` compares with.
    std::uint64_t position() const noexcept { return core_->position.load(); }

    /// The checkpoint, the head and the lag, read from the stores now; this runner's counts.
    projection_stats stats(std::error_code& ec) { return core_->stats(ec); }

    /// Says that events may have been appended: `async_run`, if running, catches up soon.
    /// Any thread; wakes coalesce.
    void notify() { core_->notify(); }

    /// `notify`, as a function for a unit of work's `on_commit`. It does nothing once the
    /// runner is gone.
    std::function<void()> waker() {
        return [weak = std::weak_ptr<core>(core_)] {
            if (auto c = weak.lock())
                c->notify();
        };
    }

    /// Runs the projection until cancelled: a catch-up now, then one each time it is woken
    /// (`notify`), and each `fallback_poll` if set. A catch-up is one batch per handler of the
    /// strand, so waits, timeouts and cancellations are served between its batches. A failed
    /// batch is counted (`stats().errors`) and tried again after `retry_delay`. Completes with
    /// `void(error_code)`: `operation_aborted` when cancelled through the token's slot (any
    /// type) or when the runner is destroyed, or `errc::invalid_state` when the runner already
    /// runs. Its pending wait does not keep `io_context::run()` from returning (it ends only
    /// when cancelled). A failpoint that halts the runner (`failpoint_halt`) leaves the handler
    /// that reached it, and the runner does nothing more, as a dead process.
    template <class Token>
    auto async_run(Token&& token) {
        return detail::async_start<void(error_code), detail::outstanding_work::untracked>(
            std::forward<Token>(token), core_->strand,
            // A weak capture: a start that throws (a failpoint) is kept by the operation, which
            // the core holds; a strong one would be a cycle.
            [weak = std::weak_ptr<core>(core_)](op_type op) {
                if (auto c = weak.lock())
                    c->start_run(std::move(op));
                else
                    op.cancelled();
            });
    }

    /// Waits until the projection has reached `target` (an append's position), at most
    /// `timeout` on the runner's clock. Completes with `void(error_code)`: success,
    /// `errc::timed_out`, or `operation_aborted` when cancelled through the token's slot (any
    /// type) or when the runner is destroyed. Completes at once when the position is already
    /// reached.
    template <class Token>
    auto async_wait(std::uint64_t target, duration timeout, Token&& token) {
        return detail::async_start<void(error_code)>(
            std::forward<Token>(token), core_->strand,
            [weak = std::weak_ptr<core>(core_), target, timeout](op_type op) {
                if (auto c = weak.lock())
                    c->start_wait(std::move(op), target, timeout);
                else
                    op.cancelled();
            });
    }

    /// The strand the runner's asynchronous work runs on.
    executor_type get_executor() const noexcept { return core_->strand; }

    const projection_options& options() const noexcept { return core_->options; }

private:
    using op_type = detail::async_op<void(error_code)>;
    using timer_type = decltype(std::declval<Clock&>().make_timer(std::declval<executor_type&>()));

    struct waiter {
        std::uint64_t target;
        op_type op;
        timer_type timer;
    };

    // Everything the runner is, shared with its pending work.
    struct core : std::enable_shared_from_this<core> {
        core(executor_type s, Events& e, Checkpoints& cp, Projection& p, Clock& c,
             projection_options o)
            : strand(std::move(s))
            , events(&e)
            , checkpoints(&cp)
            , projection(&p)
            , clock(&c)
            , options(std::move(o))
            , run_timer(c.make_timer(strand)) {}

        executor_type strand;
        Events* events;
        Checkpoints* checkpoints;
        Projection* projection;
        Clock* clock;
        projection_options options;

        // `position` moves under `position_mutex`, with `epoch`: a reset starts a new epoch,
        // and a batch committed in an older one does not move the position. Reads need no lock.
        std::atomic<std::uint64_t> position{0};
        std::mutex position_mutex;
        std::uint64_t epoch = 0;

        std::atomic<std::uint64_t> applied{0}, batches{0}, conflicts{0}, errors{0};
        std::atomic<bool> wake_posted{false}, complete_posted{false}, closed{false};
        std::atomic<std::size_t> waiting{0}; // waiters registered, or being registered

        // On the strand:
        timer_type run_timer;
        std::optional<op_type> run_op;
        bool stepping = false; // a catch-up's batches are being posted one after another
        bool dead = false;     // a failpoint halted the runner
        std::vector<std::shared_ptr<waiter>> waiters;

        std::uint64_t current_epoch() {
            std::lock_guard lock(position_mutex);
            return epoch;
        }

        // Records a position reached in `seen_epoch` (if no reset came since), and lets the
        // strand complete the waiters it satisfies.
        void note_position(std::uint64_t p, std::uint64_t seen_epoch) {
            {
                std::lock_guard lock(position_mutex);
                if (seen_epoch != epoch)
                    return;
                if (p > position.load())
                    position.store(p);
            }
            // Sequentially consistent with `start_wait`'s count-then-check: either it sees the
            // new position, or this sees its waiter. One post at a time, and none when no one
            // waits.
            if (waiting.load() > 0 && !complete_posted.exchange(true))
                boost::asio::post(strand, [weak = this->weak_from_this()] {
                    if (auto c = weak.lock()) {
                        c->complete_posted.store(false);
                        c->complete_waiters();
                    }
                });
        }

        // Sets the position to `p`, lower than it was (a reset, here or elsewhere): a new epoch.
        void lower_position(std::uint64_t p) {
            std::lock_guard lock(position_mutex);
            ++epoch;
            position.store(p);
        }

        void count_failure(const std::error_code& ec) {
            (ec == errc::concurrency_conflict ? conflicts : errors).fetch_add(1);
        }

        void maybe_halt(failpoint p, const message_id& id) const {
            if constexpr (failpoints_enabled)
                if (options.failpoint && options.failpoint(p, id))
                    throw failpoint_halt(p);
        }

        std::size_t step(std::error_code& ec) {
            auto seen_epoch = current_epoch();
            const auto from = checkpoints->position(options.name, ec);
            if (ec) {
                count_failure(ec);
                return 0;
            }
            if (from < position.load()) { // reset elsewhere
                lower_position(from);
                seen_epoch = current_epoch();
            }
            const auto page = events->read_all(from, options.batch, ec);
            if (ec) {
                count_failure(ec);
                return 0;
            }
            if (page.empty()) {
                const auto head = events->head_position(ec);
                if (!ec && from > head)
                    ec = errc::invalid_state; // the checkpoint is past the store's last event
                if (ec) {
                    count_failure(ec);
                    return 0;
                }
                note_position(from, seen_epoch);
                return 0;
            }
            {
                auto u = projection->begin();
                for (const auto& e : page)
                    if ((ec = projection->apply(u, e))) {
                        count_failure(ec);
                        return 0; // `u` rolls back
                    }
                if ((ec = checkpoints->save(u, options.name, from, page.back().position))) {
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
            applied.fetch_add(page.size());
            batches.fetch_add(1);
            note_position(page.back().position, seen_epoch);
            if (options.on_batch)
                options.on_batch(
                    {options.name, std::span<const recorded_event>(page), clock->wall_now()});
            return page.size();
        }

        std::size_t catch_up(std::error_code& ec) {
            const auto head = events->head_position(ec);
            if (ec) {
                count_failure(ec);
                return 0;
            }
            std::size_t total = 0;
            // Each step moves the checkpoint forward or stops: at most
            // (head - checkpoint) / batch + 1 steps.
            for (;;) {
                const auto n = step(ec);
                total += n;
                if (ec || n == 0 || position.load() >= head)
                    return total;
            }
        }

        std::error_code reset() {
            std::error_code ec;
            const auto from = checkpoints->position(options.name, ec);
            if (ec)
                return ec;
            auto u = projection->begin();
            if ((ec = projection->reset(u)) || (ec = checkpoints->save(u, options.name, from, 0)) ||
                (ec = u.commit()))
                return ec;
            lower_position(0);
            return {};
        }

        projection_stats stats(std::error_code& ec) {
            projection_stats s;
            s.applied = applied.load();
            s.batches = batches.load();
            s.conflicts = conflicts.load();
            s.errors = errors.load();
            s.position = checkpoints->position(options.name, ec);
            if (ec)
                return s;
            s.head = events->head_position(ec);
            if (ec)
                return s;
            s.lag_events = s.head > s.position ? s.head - s.position : 0;
            if (s.lag_events == 0)
                return s;
            const auto next = events->read_all(s.position, 1, ec);
            if (!ec && !next.empty())
                s.lag_time = std::max(store_time::duration::zero(),
                                      store_time(clock->wall_now()) - next.front().recorded_at);
            return s;
        }

        void notify() {
            if (!wake_posted.exchange(true))
                boost::asio::post(strand, [weak = this->weak_from_this()] {
                    if (auto c = weak.lock()) {
                        c->wake_posted.store(false);
                        c->round();
                    }
                });
        }

        // --- On the strand ---------------------------------------------------------------

        bool running() const { return !closed.load() && !dead && run_op && !run_op->done(); }

        // A catch-up of `async_run`, unless one is under way (it will see what woke this).
        void round() {
            if (!running() || stepping)
                return;
            stepping = true;
            next_batch();
        }

        // One batch, then the next one in a handler of its own while batches come; then the
        // timer of the fallback poll or of the retry.
        void next_batch() {
            if (!running()) {
                stepping = false;
                return;
            }
            bool failed = false;
            std::size_t n = 0;
            try {
                std::error_code ec;
                n = step(ec);
                failed = static_cast<bool>(ec);
            } catch (const failpoint_halt&) {
                dead = true; // the process "dies" here: out of io_context::run()
                stepping = false;
                throw;
            } catch (...) {
                errors.fetch_add(1);
                failed = true;
            }
            if (!failed && n > 0) {
                boost::asio::post(strand, [weak = this->weak_from_this()] {
                    if (auto c = weak.lock())
                        c->next_batch();
                });
                return;
            }
            stepping = false;
            auto next = failed ? options.retry_delay : options.fallback_poll;
            if (next.count() <= 0) {
                if (!failed)
                    return; // woken only
                next = std::chrono::milliseconds(1);
            }
            run_timer.expires_after(std::chrono::duration_cast<duration>(next));
            run_timer.async_wait([weak = this->weak_from_this()](error_code e) {
                if (auto c = weak.lock(); c && !e)
                    c->round();
            });
        }

        void start_run(op_type op) {
            if (closed.load())
                return op.cancelled();
            if (run_op && !run_op->done())
                return op(make_error_code(errc::invalid_state));
            run_op.emplace(op);
            op.on_cancel(
                [weak = this->weak_from_this()](const op_type& cancelled) {
                    if (auto c = weak.lock()) {
                        c->run_timer.cancel();
                        c->run_op.reset();
                    }
                    cancelled.cancelled();
                },
                boost::asio::cancellation_type::all);
            round();
        }

        void start_wait(op_type op, std::uint64_t target, duration timeout) {
            if (closed.load())
                return op.cancelled();
            waiting.fetch_add(1);
            if (position.load() >= target) {
                waiting.fetch_sub(1);
                return op(error_code{});
            }
            auto w = std::make_shared<waiter>(waiter{target, op, clock->make_timer(strand)});
            waiters.push_back(w);
            w->timer.expires_after(timeout);
            w->timer.async_wait([weak = this->weak_from_this(), w](error_code e) {
                if (auto c = weak.lock(); c && !e && c->forget(w))
                    w->op(make_error_code(errc::timed_out));
            });
            // The hook holds neither the operation nor the waiter (which holds it): no cycle.
            op.on_cancel(
                [weak = this->weak_from_this(),
                 weak_waiter = std::weak_ptr<waiter>(w)](const op_type& cancelled) {
                    auto c = weak.lock();
                    if (auto w = weak_waiter.lock(); c && w) {
                        c->forget(w);
                        w->timer.cancel();
                    }
                    cancelled.cancelled();
                },
                boost::asio::cancellation_type::all);
        }

        void complete_waiters() {
            const auto at = position.load();
            std::vector<std::shared_ptr<waiter>> done;
            std::erase_if(waiters, [&](const std::shared_ptr<waiter>& w) {
                if (w->target > at)
                    return false;
                done.push_back(w);
                return true;
            });
            for (const auto& w : done) {
                waiting.fetch_sub(1);
                w->timer.cancel();
                w->op(error_code{});
            }
        }

        // Removes `w` from the waiters; says whether it was there.
        bool forget(const std::shared_ptr<waiter>& w) {
            if (std::erase(waiters, w) == 0)
                return false;
            waiting.fetch_sub(1);
            return true;
        }

        // The runner is gone: its operations complete as aborted.
        void shut_down() {
            run_timer.cancel();
            if (run_op) {
                auto op = std::move(*run_op);
                run_op.reset();
                op.cancelled();
            }
            auto pending = std::move(waiters);
            waiters.clear();
            for (const auto& w : pending) {
                waiting.fetch_sub(1);
                w->timer.cancel();
                w->op.cancelled();
            }
        }
    };

    std::shared_ptr<core> core_;
};

} // namespace letterbox
