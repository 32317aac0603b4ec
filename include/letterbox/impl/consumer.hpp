// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/commit_group.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/consumer_event.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/detail/delivery_groups.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/detail/run_inner_async.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/error.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/handler_failure.hpp>
#include <letterbox/handling.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

template <class Transport, class Handler, class Clock>
struct consumer<Transport, Handler, Clock>::counters {
    std::atomic<std::uint64_t> delivered{0}, acked{0}, failed{0}, retried{0}, redelivered{0},
        dead_lettered{0}, forward_failed{0};
};

template <class Transport, class Handler, class Clock>
struct consumer<Transport, Handler, Clock>::state {
    state(Transport& t, Handler h, Clock* c, consumer_options o)
        : transport(&t)
        , handler(std::move(h))
        , clock(c)
        , options(std::move(o)) {
        if constexpr (std::is_default_constructible_v<Clock>) {
            if (!clock)
                clock = &owned_clock.emplace();
        }
        if (options.group_commit.enabled()) {
            if (letterbox::detail::runs_async<Handler>)
                throw error(errc::precondition_failed,
                            "consumer_options::group_commit needs a synchronous handler: an "
                            "asynchronous one would hold the batch's transaction open across "
                            "its waits");
            if (options.group_commit.max_delay.count() <= 0)
                throw error(errc::precondition_failed,
                            "consumer_options::group_commit.max_delay must be positive");
        }
        if (options.groups.enabled())
            groups.emplace(options.groups, options.consume.prefetch);
    }

    /// A delivery arrived from the broker: counted, then handled, or put in its group's line.
    static void received(const std::shared_ptr<state>& s, std::shared_ptr<const delivery> d) {
        s->in_flight.fetch_add(1, std::memory_order_relaxed);
        s->counts.delivered.fetch_add(1, std::memory_order_relaxed);
        s->observe(consumer_event::kind::delivered, *d);
        if (!s->groups)
            return handle(s, std::move(d), 1);
        std::optional<std::shared_ptr<const delivery>> start;
        if (!s->groups->admit(d, start)) {
            middleware::handler_failure f;
            f.error = errc::missing_group_key;
            f.exception_message = f.error.message();
            f.permanent = true;
            f.reason = std::string(middleware::death_reason::missing_group_key);
            return settle(s, std::move(d), 1,
                          disposition::reject(std::move(f), disposition::purpose::dead_letter), 0);
        }
        if (start)
            handle(s, std::move(*start), 1);
    }

    /// Whether a group waits for its head (`group_order::strict`).
    bool strict_groups() const noexcept { return groups && groups->strict(); }

    /// A delivery of a group was settled: the next of its line may run (posted, so that a long
    /// line of synchronous handlers does not nest one call in the other).
    static void release(const std::shared_ptr<state>& s, const delivery& d) {
        if (auto next = s->groups->settled(d))
            boost::asio::post(s->transport->get_executor(), [s, next = std::move(*next)]() mutable {
                handle(s, std::move(next), 1);
            });
    }

    static void handle(const std::shared_ptr<state>& s, std::shared_ptr<const delivery> d,
                       std::uint32_t run, std::uint32_t store_failures = 0) {
        if constexpr (letterbox::detail::runs_async<Handler>) {
            // A coroutine pipeline: it waits without holding the thread, on the pool if any.
            const auto ex = s->options.handler_executor
                                ? s->options.handler_executor
                                : boost::asio::any_io_executor(s->transport->get_executor());
            // What escapes the coroutine (an observer that threw, as it would escape a
            // synchronous handle) leaves through the executor's run(), never silently.
            boost::asio::co_spawn(ex, handle_async(s, std::move(d), run, store_failures),
                                  [](const std::exception_ptr& e) {
                                      if (e)
                                          std::rethrow_exception(e);
                                  });
        } else if (s->options.group_commit.enabled()) {
            join_batch(s, {std::move(d), run, store_failures});
        } else if (s->options.handler_executor) {
            // A blocking handler runs on the pool; its outcome is settled back here.
            boost::asio::post(s->options.handler_executor,
                              [s, d = std::move(d), run, store_failures]() mutable {
                                  auto r = run_handler(s, *d, run);
                                  settle_back(s, std::move(d), run, std::move(r), store_failures);
                              });
        } else {
            auto r = run_handler(s, *d, run);
            settle(s, std::move(d), run, std::move(r), store_failures);
        }
    }

    /// Settles from where the handler ran: on the transport's executor, posted there from a
    /// pool.
    static void settle_back(const std::shared_ptr<state>& s, std::shared_ptr<const delivery> d,
                            std::uint32_t run, disposition r, std::uint32_t store_failures) {
        if (!s->options.handler_executor)
            return settle(s, std::move(d), run, std::move(r), store_failures);
        boost::asio::post(s->transport->get_executor(),
                          [s, d = std::move(d), run, r = std::move(r), store_failures]() mutable {
                              settle(s, std::move(d), run, std::move(r), store_failures);
                          });
    }

    /// Runs the pipeline once for `d` (in `group`, if any); a handler that throws fails, it
    /// never escapes.
    static disposition run_handler(const std::shared_ptr<state>& s, const delivery& d,
                                   std::uint32_t run, commit_group* group = nullptr) {
        disposition r = disposition::ack();
        run_observer observer{s.get(), &d};
        observer.started();
        try {
            r = detail::run_inner(s->handler,
                                  middleware::handling{d, run, &count_rerun, &observer, group});
        } catch (...) { // a delivery handler that throws is a bug: fail, don't crash
            r = internal_failure();
        }
        observer.handled();
        return r;
    }

    /// `run_handler` and `settle_back` for a coroutine pipeline (`run_inner_async` catches).
    static boost::asio::awaitable<void> handle_async(std::shared_ptr<state> s,
                                                     std::shared_ptr<const delivery> d,
                                                     std::uint32_t run,
                                                     std::uint32_t store_failures) {
        run_observer observer{s.get(), d.get()};
        observer.started();
        const middleware::handling x{*d, run, &count_rerun, &observer};
        disposition r = internal_failure();
        try {
            r = co_await letterbox::detail::run_inner_async(s->handler, x);
        } catch (...) {
        }
        observer.handled();
        settle_back(s, std::move(d), run, std::move(r), store_failures);
    }

    // --- Group commit (consumer_options::group_commit) ---------------------------------------
    // Everything here runs on the transport's executor, except `run_batch` with a
    // `handler_executor`. One batch runs at a time; the deliveries that arrive meanwhile wait
    // for the next one.

    /// A delivery waiting for its batch, with what `handle` was given for it, and when it
    /// joined on the consumer's clock.
    struct batch_entry {
        std::shared_ptr<const delivery> d;
        std::uint32_t run;
        std::uint32_t store_failures;
        typename Clock::time_point joined{};
    };

    /// What running a batch gave: each delivery's disposition, and the group's commit.
    struct batch_outcome {
        std::vector<batch_entry> entries;
        std::vector<disposition> results;
        std::error_code commit;
    };

    /// How many deliveries make a full batch: the option, within the prefetch.
    std::size_t batch_limit() const noexcept {
        const std::size_t prefetch = options.consume.prefetch;
        const std::size_t limit = options.group_commit.max_messages;
        return prefetch > 0 ? std::min(limit, prefetch) : limit;
    }

    static void join_batch(const std::shared_ptr<state>& s, batch_entry e) {
        e.joined = s->clock->now();
        s->pending.push_back(std::move(e));
        start_batch(s);
    }

    /// How many of the first waiting deliveries the next batch takes: up to a full batch, and
    /// never a delivery that must run alone (handled again after a store failure) beside
    /// others. Such a delivery is a batch of its own: it begins its own unit of work, which on
    /// SQLite would wait for the write lock that the batch's shared unit holds, on this same
    /// thread, until the busy timeout gave up.
    std::size_t next_batch_size() const noexcept {
        if (pending.front().store_failures > 0)
            return 1;
        const auto limit = std::min(batch_limit(), pending.size());
        std::size_t n = 1;
        while (n < limit && pending[n].store_failures == 0)
            ++n;
        return n;
    }

    /// Runs the first waiting deliveries (`next_batch_size`) once the batch cannot grow (full,
    /// or cut short by a delivery that runs alone) or the oldest has waited `max_delay`;
    /// otherwise makes sure a timer will.
    static void start_batch(const std::shared_ptr<state>& s) {
        if (s->batch_running || s->pending.empty())
            return;
        const auto n = s->next_batch_size();
        const auto waited = s->clock->now() - s->pending.front().joined;
        const auto max_delay = s->options.group_commit.max_delay;
        const bool can_grow = n == s->pending.size() && n < s->batch_limit() &&
                              s->pending.front().store_failures == 0;
        if (can_grow && waited < max_delay) {
            if (!s->batch_timer) {
                s->batch_timer = true;
                const auto left = std::chrono::ceil<std::chrono::milliseconds>(max_delay - waited);
                after(s, left,
                      [generation = s->batch_generation](const std::shared_ptr<state>& self) {
                          if (generation != self->batch_generation)
                              return; // that batch already started, full
                          self->batch_timer = false;
                          start_batch(self);
                      });
            }
            return;
        }
        auto batch = std::make_shared<batch_outcome>();
        const auto end = s->pending.begin() + static_cast<std::ptrdiff_t>(n);
        batch->entries.assign(std::make_move_iterator(s->pending.begin()),
                              std::make_move_iterator(end));
        s->pending.erase(s->pending.begin(), end);
        s->batch_running = true;
        s->batch_timer = false;
        ++s->batch_generation;
        if (!s->options.handler_executor) {
            run_batch(s, *batch);
            return batch_done(s, std::move(*batch));
        }
        boost::asio::post(s->options.handler_executor, [s, batch] {
            run_batch(s, *batch);
            boost::asio::post(s->transport->get_executor(),
                              [s, batch] { batch_done(s, std::move(*batch)); });
        });
    }

    /// Runs each delivery's pipeline in one `commit_group`, then commits it. A delivery handled
    /// again after a store failure (a failed group commit among them) runs alone, committing on
    /// its own: a message whose commit fails every time cannot hold its batch-mates back.
    static void run_batch(const std::shared_ptr<state>& s, batch_outcome& b) {
        commit_group group;
        b.results.reserve(b.entries.size());
        for (const auto& e : b.entries) {
            try {
                b.results.push_back(
                    run_handler(s, *e.d, e.run, e.store_failures == 0 ? &group : nullptr));
            } catch (...) { // an observer that threw: the delivery fails, the batch goes on
                b.results.push_back(internal_failure());
            }
        }
        try {
            b.commit = group.commit();
        } catch (...) {
            // A callback threw after the commit applied (the acks stand), or the commit itself
            // threw before it did (nothing was kept).
            if (!group.applied())
                b.commit = make_error_code(errc::internal_error);
        }
    }

    /// Settles a batch: the group's successes are acknowledged once its commit applied; when it
    /// did not, nothing they staged was kept, so they are handled again after the store
    /// back-off. The other dispositions, and the deliveries that ran alone, staged nothing in
    /// the group and are carried out as they are.
    static void batch_done(const std::shared_ptr<state>& s, batch_outcome b) {
        s->batch_running = false;
        for (std::size_t i = 0; i < b.entries.size(); ++i) {
            auto& e = b.entries[i];
            disposition& r = b.results[i];
            if (!b.commit || e.store_failures > 0 || r.what() != disposition::kind::ack) {
                settle(s, std::move(e.d), e.run, std::move(r), e.store_failures);
                continue;
            }
            const middleware::handler_failure why = letterbox::detail::failure_of(b.commit);
            s->counts.failed.fetch_add(1, std::memory_order_relaxed);
            s->observe(consumer_event::kind::failed, *e.d, &why);
            wait_for_store(s, std::move(e.d), e.run, e.store_failures);
        }
        start_batch(s);
    }

    static disposition internal_failure() {
        middleware::handler_failure f;
        f.error = errc::internal_error;
        return disposition::fail(std::move(f));
    }

    static void settle(const std::shared_ptr<state>& s, std::shared_ptr<const delivery> d,
                       std::uint32_t run, disposition r, std::uint32_t store_failures) {
        auto& c = s->counts;
        auto* t = s->transport;
        auto ignore = [](std::error_code) {
        };
        switch (r.what()) {
        case disposition::kind::ack:
            c.acked.fetch_add(1, std::memory_order_relaxed);
            s->observe(consumer_event::kind::acked, *d);
            t->async_ack(*d, ignore);
            return settled(s, *d);
        case disposition::kind::fail: {
            c.failed.fetch_add(1, std::memory_order_relaxed);
            s->observe(consumer_event::kind::failed, *d, r.failure());
            // The consumer's own database failed (locked, full, unreadable): not the
            // message's fault, so it must be handled again rather than dead-lettered,
            // after a wait (a requeue would spin while the database stays locked).
            if (is_store_error(r.failure()->error))
                return wait_for_store(s, std::move(d), run, store_failures);
            // A permanent failure (an undecodable payload, a missing idempotency key)
            // fails the same way on every delivery: requeueing it would spin forever.
            if (s->options.on_failure == failure_action::requeue && !r.failure()->permanent) {
                t->async_nack(*d, true, ignore);
                return settled(s, *d);
            }
            s->observe(consumer_event::kind::rejected, *d, r.failure());
            t->async_reject(*d, false, ignore);
            return settled(s, *d);
        }
        case disposition::kind::requeue:
            c.failed.fetch_add(1, std::memory_order_relaxed);
            s->observe(consumer_event::kind::failed, *d);
            t->async_nack(*d, true, ignore);
            return settled(s, *d);
        case disposition::kind::reject:
            count(*s, r.why(), *d, s->observed_reason(r));
            s->observe(consumer_event::kind::rejected, *d);
            t->async_reject(*d, false, ignore);
            return settled(s, *d);
        case disposition::kind::retry_in:
            c.retried.fetch_add(1, std::memory_order_relaxed);
            s->observe(consumer_event::kind::retried, *d, r.failure());
            return retry_later(s, std::move(d), run, r.delay());
        case disposition::kind::forward:
            if (s->strict_groups() && r.why() == disposition::purpose::redeliver)
                return redeliver_in_place(s, std::move(d), std::move(r));
            return forward(s, std::move(d), std::move(r), store_failures);
        }
    }

    /// A strict group waits for its head: instead of publishing the copy to its retry queue,
    /// the consumer keeps the delivery, waits the copy's delay, and handles the copy as the
    /// broker would have brought it back (its headers count the attempt), as a first run.
    static void redeliver_in_place(const std::shared_ptr<state>& s,
                                   std::shared_ptr<const delivery> d, disposition r) {
        auto copy = std::make_shared<delivery>(*d);
        copy->msg.headers = r.forwarded()->headers;
        s->counts.retried.fetch_add(1, std::memory_order_relaxed);
        s->observe(consumer_event::kind::retried, *d, r.failure());
        retry_later(s, std::move(copy), 0, r.delay());
    }

    static void count(state& s, disposition::purpose p, const delivery& d,
                      std::string_view reason) {
        const bool dead = p == disposition::purpose::dead_letter;
        (dead ? s.counts.dead_lettered : s.counts.redelivered)
            .fetch_add(1, std::memory_order_relaxed);
        s.observe(dead ? consumer_event::kind::dead_lettered : consumer_event::kind::redelivered, d,
                  reason);
    }

    /// Why: the reason a layer gave up with (a `death_reason`), or else what failed (the
    /// exception's `what()`, or the error code's message); empty without a failure.
    static std::string reason_of(const disposition& r) {
        const auto* f = r.failure();
        return f ? reason_of(*f) : std::string{};
    }
    static std::string reason_of(const middleware::handler_failure& f) {
        if (!f.reason.empty())
            return f.reason;
        return f.exception_message.empty() ? f.error.message() : f.exception_message;
    }

    /// Times each run of the handler for the `handled` events: the whole call, or each run
    /// of it when a layer runs it again at once (the clock is read only for an observer).
    struct run_observer {
        state* s;
        const delivery* d;
        typename Clock::time_point start{};

        void started() {
            if (s->options.on_event)
                start = s->clock->now();
        }
        void handled() const {
            if (!s->options.on_event)
                return;
            const auto took =
                std::chrono::duration_cast<std::chrono::nanoseconds>(s->clock->now() - start);
            s->options.on_event(consumer_event{consumer_event::kind::handled, *d, {}, took});
        }
    };

    /// `handling::on_rerun`: a layer runs the handler again at once (an immediate retry). The
    /// run that failed is reported `handled`, then `retried`, and the next one is timed anew.
    static void count_rerun(void* context, const middleware::handler_failure& why, std::uint32_t) {
        auto& observer = *static_cast<run_observer*>(context);
        observer.handled();
        observer.s->counts.retried.fetch_add(1, std::memory_order_relaxed);
        observer.s->observe(consumer_event::kind::retried, *observer.d, &why);
        observer.started();
    }

    /// `reason_of(r)` for an observer to read later; nothing to build without one.
    std::string observed_reason(const disposition& r) const {
        return options.on_event ? reason_of(r) : std::string{};
    }

    /// Reports `k` with what `why` says failed; the text is built only for an observer.
    void observe(consumer_event::kind k, const delivery& d,
                 const middleware::handler_failure* why) {
        if (options.on_event)
            options.on_event(consumer_event{k, d, why ? reason_of(*why) : std::string{}, {}});
    }

    void observe(consumer_event::kind k, const delivery& d, std::string_view reason = {}) {
        if (options.on_event)
            options.on_event(consumer_event{k, d, reason, {}});
    }

    static void wait_for_store(const std::shared_ptr<state>& s, std::shared_ptr<const delivery> d,
                               std::uint32_t run, std::uint32_t store_failures) {
        auto delay = s->options.store_retry_initial;
        for (std::uint32_t i = 0; i < store_failures && delay < s->options.store_retry_max; ++i)
            delay *= 2;
        delay = std::min(delay, s->options.store_retry_max);
        after(s, delay,
              [d = std::move(d), run, store_failures](const std::shared_ptr<state>& self) mutable {
                  handle(self, std::move(d), run, store_failures + 1);
              });
    }

    /// Runs `f(state)` after `delay` on the consumer's clock, unless the consumer is gone.
    template <class F>
    static void after(const std::shared_ptr<state>& s, std::chrono::milliseconds delay, F f) {
        auto& clk = *s->clock;
        using timer_type = decltype(clk.make_timer(s->transport->get_executor()));
        auto timer = std::make_shared<timer_type>(clk.make_timer(s->transport->get_executor()));
        timer->expires_after(std::chrono::duration_cast<typename timer_type::duration>(delay));
        std::weak_ptr<state> weak = s;
        timer->async_wait([weak, timer, f = std::move(f)](auto) mutable {
            if (auto self = weak.lock())
                f(self);
        });
    }

    static void retry_later(const std::shared_ptr<state>& s, std::shared_ptr<const delivery> d,
                            std::uint32_t run, std::chrono::milliseconds delay) {
        after(s, delay, [d = std::move(d), run](const std::shared_ptr<state>& self) mutable {
            handle(self, std::move(d), run + 1);
        });
    }

    static void forward(const std::shared_ptr<state>& s, std::shared_ptr<const delivery> d,
                        disposition r, std::uint32_t store_failures) {
        const auto purpose = r.why();
        std::weak_ptr<state> weak = s;
        s->transport->async_publish(*r.forwarded(), [weak, d = std::move(d), purpose,
                                                     reason = s->observed_reason(r),
                                                     store_failures](std::error_code ec) {
            auto self = weak.lock();
            if (!self)
                return;
            auto ignore = [](std::error_code) {
            };
            if (ec) {
                // Not stored, or not known to be: keep the original. A strict group keeps
                // it at its head, handled again after a back-off; otherwise it is requeued.
                self->counts.forward_failed.fetch_add(1, std::memory_order_relaxed);
                self->observe(consumer_event::kind::forward_failed, *d);
                if (self->strict_groups())
                    return wait_for_store(self, std::move(d), 1, store_failures);
                self->transport->async_nack(*d, true, ignore);
            } else {
                count(*self, purpose, *d, reason);
                self->transport->async_ack(*d, ignore);
            }
            settled(self, *d);
        });
    }

    using wait_op = detail::async_op<void(error_code)>;

    /// Waiting leaves no trace, so every cancellation type may end it.
    static void cancellable(const wait_op& op) {
        op.on_cancel([](wait_op cancelled) { cancelled.cancelled(); },
                     boost::asio::cancellation_type::terminal |
                         boost::asio::cancellation_type::partial |
                         boost::asio::cancellation_type::total);
    }

    /// A delivery left the consumer's hands: the next of its group may run, and the waiters
    /// are told when it was the last one.
    static void settled(const std::shared_ptr<state>& s, const delivery& d) {
        if (s->groups)
            release(s, d);
        if (s->in_flight.fetch_sub(1, std::memory_order_acq_rel) == 1)
            check_idle(s);
    }

    static void add_waiter(const std::shared_ptr<state>& s, std::vector<wait_op> state::*list,
                           wait_op op) {
        cancellable(op);
        {
            std::lock_guard lock(s->waiters_mutex);
            auto& l = (*s).*list;
            std::erase_if(l, [](const wait_op& w) { return w.done(); });
            l.push_back(std::move(op));
            s->count_waiters();
        }
        check_idle(s);
    }

    /// With nothing in flight: completes the shutdowns, and asks the transport whether the
    /// queue is drained for the idle waits (again, after a pause, while it is not).
    static void check_idle(const std::shared_ptr<state>& s) {
        // Every delivery that is the last in flight comes here: without a waiter, no lock.
        if (s->in_flight.load(std::memory_order_acquire) != 0 ||
            s->waiters.load(std::memory_order_acquire) == 0)
            return;
        std::vector<wait_op> drained;
        bool ask = false;
        {
            std::lock_guard lock(s->waiters_mutex);
            drained.swap(s->drain_waiters);
            ask = !s->idle_waiters.empty() && !s->asking_depth;
            s->asking_depth = s->asking_depth || ask;
            s->count_waiters();
        }
        for (auto& op : drained)
            op(error_code{});
        if (!ask)
            return;
        if constexpr (requires {
                          s->transport->async_queue_depth(std::string{},
                                                          [](error_code, std::uint32_t) {});
                      }) {
            std::weak_ptr<state> weak = s;
            s->transport->async_queue_depth(s->options.consume.queue,
                                            [weak](error_code ec, std::uint32_t ready) {
                                                if (auto self = weak.lock())
                                                    depth_known(self, ec, ready);
                                            });
        } else {
            depth_known(s, {}, 0);
        }
    }

    static void depth_known(const std::shared_ptr<state>& s, error_code ec, std::uint32_t ready) {
        const bool idle = !ec && ready == 0 && s->in_flight.load(std::memory_order_acquire) == 0;
        std::vector<wait_op> done;
        {
            std::lock_guard lock(s->waiters_mutex);
            s->asking_depth = false;
            if (ec || idle)
                done.swap(s->idle_waiters);
            s->count_waiters();
        }
        for (auto& op : done)
            op(ec);
        if (ec || idle || ready == 0)
            return; // a delivery in flight asks again when it settles
        // Ready messages but nothing in flight: they are on their way, or another consumer of
        // the queue takes them. Ask again shortly.
        auto timer = std::make_shared<boost::asio::steady_timer>(s->transport->get_executor());
        timer->expires_after(std::chrono::milliseconds(10));
        std::weak_ptr<state> weak = s;
        timer->async_wait([weak, timer](auto) {
            if (auto self = weak.lock())
                check_idle(self);
        });
    }

    /// Publishes how many waits are registered (under `waiters_mutex`).
    void count_waiters() {
        waiters.store(idle_waiters.size() + drain_waiters.size(), std::memory_order_release);
    }

    Transport* transport;
    Handler handler;
    std::optional<Clock> owned_clock{}; // the default clock, when none was given
    Clock* clock;
    consumer_options options;
    counters counts;
    // Deliveries received and not yet settled, and who waits for that to be none.
    std::atomic<std::uint64_t> in_flight{0};
    std::mutex waiters_mutex;
    std::vector<wait_op> idle_waiters, drain_waiters;
    std::atomic<std::size_t> waiters{0}; // their number, read without the lock
    bool asking_depth = false;           // an async_queue_depth is on its way
    // Group commit: the deliveries waiting for the next batch, and its state.
    std::vector<batch_entry> pending;
    std::uint64_t batch_generation = 0; // batches started so far
    bool batch_running = false;
    bool batch_timer = false; // a timer will start the waiting batch
    // Message groups, when on (transport's executor only).
    std::optional<detail::delivery_groups> groups{};
};

template <class Transport, class Handler, class Clock>
template <class Token>
auto consumer<Transport, Handler, Clock>::async_start(Token&& token) {
    std::weak_ptr<state> weak = state_;
    return state_->transport->async_consume(
        state_->options.consume,
        [weak](delivery d) {
            if (auto s = weak.lock())
                state::received(s, std::make_shared<const delivery>(std::move(d)));
        },
        std::forward<Token>(token));
}

template <class Transport, class Handler, class Clock>
template <class Token>
auto consumer<Transport, Handler, Clock>::async_stop(const std::string& tag, Token&& token) {
    return state_->transport->async_cancel(tag, std::forward<Token>(token));
}

template <class Transport, class Handler, class Clock>
template <class Token>
auto consumer<Transport, Handler, Clock>::async_wait_idle(Token&& token) {
    return detail::async_start<void(error_code)>(
        std::forward<Token>(token), state_->transport->get_executor(),
        [s = state_](typename state::wait_op op) {
            state::add_waiter(s, &state::idle_waiters, std::move(op));
        });
}

template <class Transport, class Handler, class Clock>
template <class Token>
auto consumer<Transport, Handler, Clock>::async_shutdown(const std::string& tag, Token&& token) {
    return detail::async_start<void(error_code)>(
        std::forward<Token>(token), state_->transport->get_executor(),
        [s = state_, tag](typename state::wait_op op) {
            state::cancellable(op);
            std::weak_ptr<state> weak = s;
            s->transport->async_cancel(tag, [weak, op](error_code ec) {
                auto self = weak.lock();
                if (ec || !self)
                    return op(ec);
                state::add_waiter(self, &state::drain_waiters, op);
            });
        });
}

template <class Transport, class Handler, class Clock>
consumer_stats consumer<Transport, Handler, Clock>::stats() const noexcept {
    const auto& c = state_->counts;
    auto get = [](const std::atomic<std::uint64_t>& a) {
        return a.load(std::memory_order_relaxed);
    };
    return {get(c.delivered),   get(c.acked),         get(c.failed),        get(c.retried),
            get(c.redelivered), get(c.dead_lettered), get(c.forward_failed)};
}

} // namespace letterbox
