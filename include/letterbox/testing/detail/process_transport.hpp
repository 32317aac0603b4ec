// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>

#include <boost/asio/post.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// What a simulated process's transport tells the run's recorder, and asks it.
struct process_observer {
    /// A publish is handed to the broker.
    std::function<void(const message&)> publishing;
    /// A publish completed (success: confirmed and routed).
    std::function<void(const message&, std::error_code)> published;
    /// A delivery arrived (before the handler sees it).
    std::function<void(const delivery&)> delivered;
    /// The process acknowledges, or nacks/rejects (`requeue`), a delivery.
    std::function<void(const delivery&)> acking;
    std::function<void(const delivery&, bool requeue)> nacking;
    /// How long a delivery waits before the handler sees it (a slow consumer); zero: at once.
    std::function<std::chrono::nanoseconds()> delivery_delay;
    /// Runs `f` after a delay of virtual time.
    std::function<void(std::chrono::nanoseconds, std::function<void()>)> after;
};

/// The transport of one simulated process: a `transport` that forwards to `Inner` (its own
/// connection to the broker), tells a `process_observer` what the process does, and can be
/// killed. A killed process does nothing more: its deliveries are dropped, its calls complete
/// with `errc::closed`, its connection is closed (the broker requeues what it held), and what
/// completes after its death is not reported. Plain callbacks only (what letterbox's relay and
/// consumer pass). Copies share one process.
///
/// Three deliberately broken modes serve the self-test (`pipeline_defect`):
/// `confirm_on_send` completes a publish with success as soon as it is sent, before the broker
/// answered; `return_as_success` completes a publish the broker returned as unroutable
/// (`errc::no_route`) with success; `ack_on_delivery` acknowledges each delivery before the
/// handler runs.
template <class Inner>
class process_transport {
public:
    using transport_concept = transport_tag;
    using executor_type = typename Inner::executor_type;

    process_transport(Inner inner, process_observer observer)
        : s_(std::make_shared<state>(std::move(inner), std::move(observer))) {}

    executor_type get_executor() const { return s_->inner.get_executor(); }

    void confirm_on_send(bool on) { s_->confirm_on_send = on; }
    void return_as_success(bool on) { s_->return_as_success = on; }
    void ack_on_delivery(bool on) { s_->ack_on_delivery = on; }
    /// Acknowledges `d` now, and its later acknowledgement or rejection does nothing (the
    /// `ack_before_batch_commit` defect).
    void ack_now(const delivery& d) {
        if (s_->dead || !s_->pre_acked.insert({d.channel, d.delivery_tag}).second)
            return;
        if (s_->observer.acking)
            s_->observer.acking(d);
        s_->inner.async_ack(d, [](std::error_code) {});
    }

    /// Kills the process: see the class comment. Idempotent.
    void kill() {
        if (s_->dead)
            return;
        s_->dead = true;
        // A dead process learns nothing more: the close's outcome has no one to tell.
        s_->inner.async_close([](std::error_code) {});
    }
    bool dead() const noexcept { return s_->dead; }
    /// Deliveries this (slow) process received and has not yet handed to its handler. A run
    /// is quiescent only when none is held: a copy held across a connection drop still
    /// reaches the handler, after the broker gave it to someone else.
    std::size_t holding() const noexcept { return s_->held.size(); }

    template <class H>
    void async_declare(const topology::exchange& x, H&& h) {
        s_->inner.async_declare(x, std::forward<H>(h));
    }
    template <class H>
    void async_declare(const topology::queue& q, H&& h) {
        s_->inner.async_declare(q, std::forward<H>(h));
    }
    template <class H>
    void async_bind(const topology::binding& b, H&& h) {
        s_->inner.async_bind(b, std::forward<H>(h));
    }

    template <class H>
    void async_publish(const message& m, H&& h) {
        if (s_->dead)
            return fail(std::forward<H>(h));
        if (s_->observer.publishing)
            s_->observer.publishing(m);
        if (s_->confirm_on_send) {
            // The naive process this models takes "sent" for "stored": it never looks at the
            // confirm, which is the bug under test.
            s_->inner.async_publish(m, [](std::error_code) {});
            if (s_->observer.published)
                s_->observer.published(m, {});
            return boost::asio::post(get_executor(), [h = std::forward<H>(h)]() mutable {
                std::move(h)(std::error_code{});
            });
        }
        s_->inner.async_publish(m, [s = s_, m, h = std::forward<H>(h)](std::error_code ec) mutable {
            if (s->return_as_success && ec == errc::no_route)
                ec = {};
            if (!s->dead && s->observer.published)
                s->observer.published(m, ec);
            std::move(h)(ec);
        });
    }

    template <class H>
    void async_consume(const consume_options& o, std::function<void(delivery)> on_delivery, H&& h) {
        if (s_->dead)
            return boost::asio::post(get_executor(), [h = std::forward<H>(h)]() mutable {
                std::move(h)(make_error_code(errc::closed), std::string());
            });
        auto forward = [s = s_, f = std::move(on_delivery)](delivery d) {
            if (s->dead)
                return;
            if (s->observer.delivered)
                s->observer.delivered(d);
            if (s->ack_on_delivery) {
                if (s->observer.acking)
                    s->observer.acking(d);
                s->pre_acked.insert({d.channel, d.delivery_tag});
                // Auto-ack before handling, the naive consumer's bug under test: whether the
                // ack arrived does not change what the process does next.
                s->inner.async_ack(d, [](std::error_code) {});
            }
            const auto delay = s->observer.delivery_delay ? s->observer.delivery_delay()
                                                          : std::chrono::nanoseconds{};
            if (s->held.empty() && (delay.count() <= 0 || !s->observer.after))
                return f(std::move(d));
            // A slow consumer: deliveries reach the handler one after another, each `delay`
            // after the previous one, never out of order.
            s->held.push_back(held_delivery{std::move(d), delay, f});
            if (s->held.size() == 1)
                release_next(s);
        };
        s_->inner.async_consume(o, std::move(forward), std::forward<H>(h));
    }

    template <class H>
    void async_cancel(const std::string& tag, H&& h) {
        if (s_->dead)
            return fail(std::forward<H>(h));
        s_->inner.async_cancel(tag, std::forward<H>(h));
    }

    template <class H>
    void async_ack(const delivery& d, H&& h) {
        if (s_->dead)
            return fail(std::forward<H>(h));
        if (s_->pre_acked.erase({d.channel, d.delivery_tag}) != 0)
            return boost::asio::post(get_executor(), [h = std::forward<H>(h)]() mutable {
                std::move(h)(std::error_code{});
            });
        if (s_->observer.acking)
            s_->observer.acking(d);
        s_->inner.async_ack(d, std::forward<H>(h));
    }
    template <class H>
    void async_nack(const delivery& d, bool requeue, H&& h) {
        settle_negatively(d, requeue, std::forward<H>(h), false);
    }
    template <class H>
    void async_reject(const delivery& d, bool requeue, H&& h) {
        settle_negatively(d, requeue, std::forward<H>(h), true);
    }

    template <class H>
    void async_close(H&& h) {
        s_->inner.async_close(std::forward<H>(h));
    }

private:
    struct held_delivery {
        delivery d;
        std::chrono::nanoseconds delay;
        std::function<void(delivery)> to;
    };

    struct state {
        state(Inner i, process_observer o)
            : inner(std::move(i))
            , observer(std::move(o)) {}
        Inner inner;
        process_observer observer;
        bool dead = false;
        bool confirm_on_send = false;
        bool return_as_success = false;
        bool ack_on_delivery = false;
        std::set<std::pair<std::uint64_t, std::uint64_t>> pre_acked;
        std::deque<held_delivery> held;
    };

    static void release_next(const std::shared_ptr<state>& s) {
        s->observer.after(s->held.front().delay, [s] {
            if (s->dead || s->held.empty())
                return;
            auto next = std::move(s->held.front());
            s->held.pop_front();
            if (!s->held.empty())
                release_next(s);
            next.to(std::move(next.d));
        });
    }

    template <class H>
    void fail(H&& h) {
        boost::asio::post(get_executor(), [h = std::forward<H>(h)]() mutable {
            std::move(h)(make_error_code(errc::closed));
        });
    }

    template <class H>
    void settle_negatively(const delivery& d, bool requeue, H&& h, bool reject) {
        if (s_->dead)
            return fail(std::forward<H>(h));
        if (s_->pre_acked.erase({d.channel, d.delivery_tag}) != 0) // already gone
            return boost::asio::post(get_executor(), [h = std::forward<H>(h)]() mutable {
                std::move(h)(std::error_code{});
            });
        if (s_->observer.nacking)
            s_->observer.nacking(d, requeue);
        if (reject)
            s_->inner.async_reject(d, requeue, std::forward<H>(h));
        else
            s_->inner.async_nack(d, requeue, std::forward<H>(h));
    }

    std::shared_ptr<state> s_;
};

} // namespace letterbox::testing::detail
