// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/consumer_event.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/error.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/steady_clock.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace letterbox {

/// What a `consumer` does with a delivery whose handler failed.
enum class failure_action : std::uint8_t {
    /// `basic.reject` without requeue: the queue's dead-letter exchange receives it with an
    /// `x-death` entry (declare one: without it the broker drops the message).
    dead_letter,
    /// `basic.nack` with requeue: the message goes back to its place in the queue and comes
    /// again at once. Only for faults known to be short; a poison message would loop. A
    /// failure marked permanent (`middleware::handler_failure::permanent`: an error with a
    /// reason of its own, such as `errc::missing_idempotency_key`, or a policy's decision) is
    /// rejected as with `dead_letter` instead, since it would fail again on every delivery.
    requeue,
};

/// How a `consumer` consumes and settles.
struct consumer_options {
    /// The queue, prefetch and tag to consume with.
    consume_options consume{};
    /// What to do when the handler fails (by exception or error code).
    failure_action on_failure = failure_action::dead_letter;
    /// When the consumer's own store fails (`is_store_error`: locked, full, unreadable), the
    /// delivery is held and handled again after this wait, doubled after each consecutive
    /// store failure of that delivery up to `store_retry_max`. Requeueing at once instead
    /// would bring it straight back, in a hot loop, for as long as the database stays locked.
    /// Greater than zero.
    std::chrono::milliseconds store_retry_initial{100};
    std::chrono::milliseconds store_retry_max{10'000};
    /// Observes what the consumer does with each delivery (`consumer_event`): for metrics, such
    /// as `letterbox::ops::letterbox_metrics`. Called on the transport's executor,
    /// synchronously; it must be quick, must not throw and must not call the consumer.
    std::function<void(const consumer_event&)> on_event{};
};

/// What a consumer has seen, for metrics and tests.
struct consumer_stats {
    std::uint64_t delivered = 0;
    /// Handled successfully and acknowledged.
    std::uint64_t acked = 0;
    /// Failed with no layer deciding, and settled according to `consumer_options::on_failure`
    /// (or, for a store error, handled again after `store_retry_initial`).
    std::uint64_t failed = 0;
    /// Runs scheduled again after an in-process retry delay (`disposition::retry_in`).
    std::uint64_t retried = 0;
    /// Handed back to the broker for a delayed retry (a confirmed copy in a retry queue, or a
    /// reject onto the retry queue).
    std::uint64_t redelivered = 0;
    /// Dead-lettered by the middleware (a confirmed copy in the dead-letter queue, or a
    /// native reject).
    std::uint64_t dead_lettered = 0;
    /// Forwards whose publish failed (returned, nacked, connection lost): the original was
    /// requeued instead of acknowledged, so nothing was lost.
    std::uint64_t forward_failed = 0;

    friend bool operator==(const consumer_stats&, const consumer_stats&) = default;
};

/// Runs a handler for every delivery of a queue and carries out what it decides: **ack only
/// after the handler returned success**, so a crash before that (or a failed handler) leaves
/// the message to be delivered again. This is what makes the idempotent middleware's
/// "commit, then ack" order hold.
///
/// `Handler` is either a plain `handler` (success acks, failure takes `on_failure`) or a
/// `delivery_handler` built with middleware (`middleware::compose`), whose
/// `middleware::disposition` the consumer carries out:
/// - `ack`; `fail` (the last resort below); `reject` and `requeue` as they say;
/// - `retry_in`: waits the delay on `Clock` (holding the delivery), then runs again;
/// - `forward`: publishes the copy (mandatory, confirmed) and acks the original only after
///   the confirm; if that publish fails, the original is requeued. A crash in between
///   leaves both (a duplicate for the inbox to absorb), never neither.
///
/// The handler runs on the transport's executor, one delivery at a time per consumer, so a
/// handler that blocks (a SQLite transaction) holds that executor for its duration.
/// Exceptions thrown by the handler count as failures and never escape; a `std::system_error`
/// (such as `letterbox::error`) keeps its code. A failure of the consumer's own store (an
/// `errc::store_*` code: database locked, disk full, ...) is not the message's fault: the
/// delivery is held and handled again after a back-off (`store_retry_initial`, doubling up to
/// `store_retry_max`), whatever `on_failure` says, so it is never dead-lettered or dropped for
/// it, and a locked database never turns into a hot requeue loop. If the process dies
/// meanwhile, the broker redelivers the held message.
///
/// Thread safety: use one consumer from the transport's executor. The transport and the
/// clock must outlive it; in-flight handlers keep the consumer's state alive.
///
/// Example:
///
///     letterbox::consumer c(transport, pipeline, clock, {.consume = {.queue = "enrollments"}});
///     co_await c.async_start(asio::use_awaitable);
template <transport Transport, class Handler, clock Clock = steady_clock>
    requires handler<Handler> || delivery_handler<Handler>
class consumer {
public:
    /// A consumer whose in-process retry delays run on the system's steady clock.
    consumer(Transport& transport, Handler h,
             consumer_options options = {}) requires std::same_as<Clock, steady_clock>
        : state_(std::make_shared<state>(transport, std::move(h), nullptr, std::move(options))) {}

    consumer(Transport& transport, Handler h, Clock& clock, consumer_options options = {})
        : state_(std::make_shared<state>(transport, std::move(h), &clock, std::move(options))) {}

    /// Starts consuming; completes with `void(std::error_code, std::string consumer_tag)`.
    template <class Token>
    auto async_start(Token&& token) {
        std::weak_ptr<state> weak = state_;
        return state_->transport->async_consume(
            state_->options.consume,
            [weak](delivery d) {
                if (auto s = weak.lock())
                    state::handle(s, std::make_shared<const delivery>(std::move(d)), 1);
            },
            std::forward<Token>(token));
    }

    /// Cancels the consumer with `tag` (from `async_start`); deliveries already received are
    /// still handled and settled. Completes with `void(std::error_code)`.
    template <class Token>
    auto async_stop(const std::string& tag, Token&& token) {
        return state_->transport->async_cancel(tag, std::forward<Token>(token));
    }

    consumer_stats stats() const noexcept {
        const auto& c = state_->counts;
        auto get = [](const std::atomic<std::uint64_t>& a) {
            return a.load(std::memory_order_relaxed);
        };
        return {get(c.delivered),   get(c.acked),         get(c.failed),        get(c.retried),
                get(c.redelivered), get(c.dead_lettered), get(c.forward_failed)};
    }

    /// The handler (e.g. to read its statistics).
    const Handler& handler() const noexcept { return state_->handler; }

private:
    using disposition = middleware::disposition;

    struct counters {
        std::atomic<std::uint64_t> delivered{0}, acked{0}, failed{0}, retried{0}, redelivered{0},
            dead_lettered{0}, forward_failed{0};
    };

    struct state {
        state(Transport& t, Handler h, Clock* c, consumer_options o)
            : transport(&t)
            , handler(std::move(h))
            , clock(c)
            , options(std::move(o)) {
            if constexpr (std::is_default_constructible_v<Clock>) {
                if (!clock)
                    clock = &owned_clock.emplace();
            }
        }

        static void handle(const std::shared_ptr<state>& s, std::shared_ptr<const delivery> d,
                           std::uint32_t run, std::uint32_t store_failures = 0) {
            if (run == 1 && store_failures == 0) {
                s->counts.delivered.fetch_add(1, std::memory_order_relaxed);
                s->observe(consumer_event::kind::delivered, *d);
            }
            disposition r = disposition::ack();
            // The clock is read only for an observer: nothing on the hot path without one.
            const bool timed = static_cast<bool>(s->options.on_event);
            const auto started = timed ? s->clock->now() : typename Clock::time_point{};
            try {
                r = detail::run_inner(s->handler, middleware::handling{*d, run});
            } catch (...) { // a delivery handler that throws is a bug: fail, don't crash
                middleware::handler_failure f;
                f.error = errc::internal_error;
                r = disposition::fail(std::move(f));
            }
            if (timed) {
                const auto took =
                    std::chrono::duration_cast<std::chrono::nanoseconds>(s->clock->now() - started);
                s->options.on_event(consumer_event{consumer_event::kind::handled, *d, {}, took});
            }
            settle(s, std::move(d), run, std::move(r), store_failures);
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
                return t->async_ack(*d, ignore);
            case disposition::kind::fail: {
                c.failed.fetch_add(1, std::memory_order_relaxed);
                s->observe(consumer_event::kind::failed, *d);
                // The consumer's own database failed (locked, full, unreadable): not the
                // message's fault, so it must be handled again rather than dead-lettered,
                // after a wait (a requeue would spin while the database stays locked).
                if (is_store_error(r.failure()->error))
                    return wait_for_store(s, std::move(d), run, store_failures);
                // A permanent failure (an undecodable payload, a missing idempotency key)
                // fails the same way on every delivery: requeueing it would spin forever.
                if (s->options.on_failure == failure_action::requeue && !r.failure()->permanent)
                    return t->async_nack(*d, true, ignore);
                s->observe(consumer_event::kind::rejected, *d);
                return t->async_reject(*d, false, ignore);
            }
            case disposition::kind::requeue:
                c.failed.fetch_add(1, std::memory_order_relaxed);
                s->observe(consumer_event::kind::failed, *d);
                return t->async_nack(*d, true, ignore);
            case disposition::kind::reject:
                count(*s, r.why(), *d, reason_of(r));
                s->observe(consumer_event::kind::rejected, *d);
                return t->async_reject(*d, false, ignore);
            case disposition::kind::retry_in:
                c.retried.fetch_add(1, std::memory_order_relaxed);
                s->observe(consumer_event::kind::retried, *d);
                return retry_later(s, std::move(d), run, r.delay());
            case disposition::kind::forward:
                return forward(s, std::move(d), std::move(r));
            }
        }

        static void count(state& s, disposition::purpose p, const delivery& d,
                          std::string_view reason) {
            const bool dead = p == disposition::purpose::dead_letter;
            (dead ? s.counts.dead_lettered : s.counts.redelivered)
                .fetch_add(1, std::memory_order_relaxed);
            s.observe(dead ? consumer_event::kind::dead_lettered
                           : consumer_event::kind::redelivered,
                      d, reason);
        }

        static std::string reason_of(const disposition& r) {
            const auto* f = r.failure();
            return f ? f->reason : std::string{};
        }

        void observe(consumer_event::kind k, const delivery& d, std::string_view reason = {}) {
            if (options.on_event)
                options.on_event(consumer_event{k, d, reason, {}});
        }

        static void wait_for_store(const std::shared_ptr<state>& s,
                                   std::shared_ptr<const delivery> d, std::uint32_t run,
                                   std::uint32_t store_failures) {
            auto delay = s->options.store_retry_initial;
            for (std::uint32_t i = 0; i < store_failures && delay < s->options.store_retry_max; ++i)
                delay *= 2;
            delay = std::min(delay, s->options.store_retry_max);
            after(s, delay,
                  [d = std::move(d), run,
                   store_failures](const std::shared_ptr<state>& self) mutable {
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
                            disposition r) {
            const auto purpose = r.why();
            std::weak_ptr<state> weak = s;
            s->transport->async_publish(
                *r.forwarded(),
                [weak, d = std::move(d), purpose, reason = reason_of(r)](std::error_code ec) {
                    auto self = weak.lock();
                    if (!self)
                        return;
                    auto ignore = [](std::error_code) {
                    };
                    if (ec) {
                        // Not stored, or not known to be: keep the original.
                        self->counts.forward_failed.fetch_add(1, std::memory_order_relaxed);
                        self->observe(consumer_event::kind::forward_failed, *d);
                        return self->transport->async_nack(*d, true, ignore);
                    }
                    count(*self, purpose, *d, reason);
                    self->transport->async_ack(*d, ignore);
                });
        }

        Transport* transport;
        Handler handler;
        std::optional<Clock> owned_clock{}; // the default clock, when none was given
        Clock* clock;
        consumer_options options;
        counters counts;
    };

    std::shared_ptr<state> state_;
};

template <transport Transport, class Handler, clock Clock>
consumer(Transport&, Handler, Clock&, consumer_options = {}) -> consumer<Transport, Handler, Clock>;

} // namespace letterbox
