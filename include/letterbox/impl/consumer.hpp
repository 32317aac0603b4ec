// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/consumer_event.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/error.hpp>
#include <letterbox/handler_failure.hpp>
#include <letterbox/handling.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

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
        rerun_context rerun{s.get(), d.get()};
        try {
            r = detail::run_inner(s->handler, middleware::handling{*d, run, &count_rerun, &rerun});
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
            s->observe(consumer_event::kind::failed, *d, r.failure());
            // The consumer's own database failed (locked, full, unreadable): not the
            // message's fault, so it must be handled again rather than dead-lettered,
            // after a wait (a requeue would spin while the database stays locked).
            if (is_store_error(r.failure()->error))
                return wait_for_store(s, std::move(d), run, store_failures);
            // A permanent failure (an undecodable payload, a missing idempotency key)
            // fails the same way on every delivery: requeueing it would spin forever.
            if (s->options.on_failure == failure_action::requeue && !r.failure()->permanent)
                return t->async_nack(*d, true, ignore);
            s->observe(consumer_event::kind::rejected, *d, r.failure());
            return t->async_reject(*d, false, ignore);
        }
        case disposition::kind::requeue:
            c.failed.fetch_add(1, std::memory_order_relaxed);
            s->observe(consumer_event::kind::failed, *d);
            return t->async_nack(*d, true, ignore);
        case disposition::kind::reject:
            count(*s, r.why(), *d, s->observed_reason(r));
            s->observe(consumer_event::kind::rejected, *d);
            return t->async_reject(*d, false, ignore);
        case disposition::kind::retry_in:
            c.retried.fetch_add(1, std::memory_order_relaxed);
            s->observe(consumer_event::kind::retried, *d, r.failure());
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

    /// The delivery a run is for, for `count_rerun`.
    struct rerun_context {
        state* s;
        const delivery* d;
    };

    /// `handling::on_rerun`: a layer runs the handler again at once (an immediate retry).
    static void count_rerun(void* context, const middleware::handler_failure& why, std::uint32_t) {
        const auto& [s, d] = *static_cast<const rerun_context*>(context);
        s->counts.retried.fetch_add(1, std::memory_order_relaxed);
        s->observe(consumer_event::kind::retried, *d, &why);
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
                        disposition r) {
        const auto purpose = r.why();
        std::weak_ptr<state> weak = s;
        s->transport->async_publish(
            *r.forwarded(),
            [weak, d = std::move(d), purpose, reason = s->observed_reason(r)](std::error_code ec) {
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

template <class Transport, class Handler, class Clock>
template <class Token>
auto consumer<Transport, Handler, Clock>::async_start(Token&& token) {
    std::weak_ptr<state> weak = state_;
    return state_->transport->async_consume(
        state_->options.consume,
        [weak](delivery d) {
            if (auto s = weak.lock())
                state::handle(s, std::make_shared<const delivery>(std::move(d)), 1);
        },
        std::forward<Token>(token));
}

template <class Transport, class Handler, class Clock>
template <class Token>
auto consumer<Transport, Handler, Clock>::async_stop(const std::string& tag, Token&& token) {
    return state_->transport->async_cancel(tag, std::forward<Token>(token));
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
