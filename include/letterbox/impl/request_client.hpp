// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/error.hpp>
#include <letterbox/request_client.hpp>
#include <letterbox/topology/direct_reply_to.hpp>
#include <letterbox/topology/queue.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

// Everything runs on the transport's executor: the requests' starts, their timers, the reply
// consumer's deliveries and the connection watch.
template <class Transport, class Clock>
struct request_client<Transport, Clock>::state : std::enable_shared_from_this<state> {
    using reply_op = detail::async_op<void(error_code, message)>;
    using timer_type = std::decay_t<decltype(std::declval<Clock&>().make_timer(
        std::declval<boost::asio::any_io_executor>()))>;

    enum class lifecycle : std::uint8_t { idle, starting, ready, recovering, stopped };
    struct pending {
        reply_op op;
        timer_type timer;
    };
    struct counters {
        std::atomic<std::uint64_t> requests{0}, replied{0}, timed_out{0}, cancelled{0}, failed{0},
            late{0}, unknown{0};
    };

    state(Transport& t, Clock* c, request_client_options o)
        : transport(&t)
        , clock(c) {
        if constexpr (std::is_default_constructible_v<Clock>) {
            if (!clock)
                clock = &owned_clock.emplace();
        }
        // The client's id names its reply queue and starts each of its correlation ids.
        const auto id = letterbox::to_string(message_id_generator()());
        queue = o.reply_queue.empty() ? "letterbox.reply." + id : std::move(o.reply_queue);
        route = o.route;
        prefix = id + ":";
    }

    // ---- setup: the reply queue and its consumer ---------------------------------------

    static void start(const std::shared_ptr<state>& s, detail::async_op<void(error_code)> op) {
        if (s->phase != lifecycle::idle)
            return op(make_error_code(s->phase == lifecycle::stopped ? errc::closed
                                                                     : errc::precondition_failed));
        s->phase = lifecycle::starting;
        s->setup([s, op](error_code ec) {
            if (s->phase == lifecycle::stopped)
                return op(make_error_code(errc::closed));
            s->phase = ec ? lifecycle::idle : lifecycle::ready;
            if (!ec)
                s->watch();
            op(ec);
        });
    }

    // Consumes replies: from direct reply-to, or from the reply queue after declaring it. After
    // a lost connection it runs again: the broker deleted the exclusive queue with the
    // connection, and the consumers with it (a transport that consumes again by itself has the
    // old tag cancelled first, so that no reply consumer is left behind).
    template <class Done>
    void setup(Done done) {
        std::weak_ptr<state> weak = this->shared_from_this();
        const bool direct = route != reply_route::reply_queue;
        auto consume = [weak, done, direct](error_code ec) mutable {
            auto s = weak.lock();
            if (!s || s->phase == lifecycle::stopped)
                return done(make_error_code(errc::closed));
            if (ec)
                return done(ec);
            consume_options o;
            o.queue = direct ? std::string(topology::direct_reply_to) : s->queue;
            o.no_ack = true;
            o.prefetch = 0;
            s->transport->async_consume(
                o,
                [weak](delivery d) {
                    if (auto s = weak.lock())
                        s->on_reply(std::move(d.msg));
                },
                [weak, done, direct](error_code ec, std::string tag) mutable {
                    auto s = weak.lock();
                    if (!s)
                        return done(make_error_code(errc::closed));
                    if (!ec && s->phase == lifecycle::stopped) {
                        // Stopped while it subscribed: the consumer must not outlive the client.
                        s->transport->async_cancel(tag, [](error_code) {});
                        return done(make_error_code(errc::closed));
                    }
                    if (!ec) {
                        s->consumer_tag = std::move(tag);
                        s->address = direct ? std::string(topology::direct_reply_to) : s->queue;
                        if (direct)
                            s->route = reply_route::direct_reply_to;
                        return done(ec);
                    }
                    // Refused (not for a lost connection): automatic falls back to a queue.
                    if (direct && s->route == reply_route::automatic &&
                        ec != errc::connection_closed && ec != errc::closed &&
                        ec != errc::outcome_unknown) {
                        s->route = reply_route::reply_queue;
                        return s->setup(std::move(done));
                    }
                    done(ec);
                });
        };
        auto declare = [weak, consume, direct](error_code) mutable {
            auto s = weak.lock();
            if (!s)
                return;
            if (direct)
                return consume(error_code{});
            topology::queue q;
            q.name = s->queue;
            q.durable = false;
            q.exclusive = true;
            q.auto_delete = true;
            s->transport->async_declare(q, std::move(consume));
        };
        if (consumer_tag.empty())
            return declare(error_code{});
        transport->async_cancel(std::exchange(consumer_tag, std::string()), std::move(declare));
    }

    // With a `connection_watcher`, a lost connection ends every waiting request at once:
    // their replies were to come to a queue that went with the connection. The queue and its
    // consumer are then set up again, retried with a growing delay while the broker is away;
    // requests started meanwhile fail at once with `errc::connection_closed`.
    void watch() {
        if constexpr (connection_watcher<Transport>) {
            std::weak_ptr<state> weak = this->shared_from_this();
            transport->async_wait_disconnected(
                boost::asio::bind_cancellation_slot(stop_watch.slot(), [weak](error_code ec) {
                    auto s = weak.lock();
                    if (!s || s->phase == lifecycle::stopped || ec)
                        return;
                    s->phase = lifecycle::recovering;
                    s->fail_all(make_error_code(errc::connection_closed), s->counts.failed);
                    s->recover(min_retry_delay);
                }));
        }
    }

    static constexpr std::chrono::milliseconds min_retry_delay{100};
    static constexpr std::chrono::milliseconds max_retry_delay{5'000};

    void recover(std::chrono::milliseconds delay) {
        std::weak_ptr<state> weak = this->shared_from_this();
        setup([weak, delay](error_code ec) {
            auto s = weak.lock();
            if (!s || s->phase != lifecycle::recovering)
                return;
            if (!ec) {
                s->phase = lifecycle::ready;
                return s->watch();
            }
            s->retry_timer.emplace(s->clock->make_timer(s->transport->get_executor()));
            s->retry_timer->expires_after(
                std::chrono::duration_cast<duration>(std::chrono::nanoseconds(delay)));
            s->retry_timer->async_wait([weak, delay](boost::system::error_code e) {
                if (auto s = weak.lock(); s && !e && s->phase == lifecycle::recovering)
                    s->recover(std::min(delay * 2, max_retry_delay));
            });
        });
    }

    // ---- requests ------------------------------------------------------------------------

    static void request(const std::shared_ptr<state>& s, message&& m, duration timeout,
                        reply_op op) {
        s->counts.requests.fetch_add(1, std::memory_order_relaxed);
        if (s->phase != lifecycle::ready) {
            s->counts.failed.fetch_add(1, std::memory_order_relaxed);
            return op(make_error_code(s->phase == lifecycle::recovering ? errc::connection_closed
                                      : s->phase == lifecycle::stopped  ? errc::closed
                                                                       : errc::precondition_failed),
                      message{});
        }
        const auto n = ++s->issued;
        m.properties.correlation_id = s->prefix + std::to_string(n);
        m.properties.reply_to = s->address;
        auto [it, inserted] =
            s->waiting.emplace(n, pending{op, s->clock->make_timer(s->transport->get_executor())});
        std::weak_ptr<state> weak = s;
        it->second.timer.expires_after(timeout);
        it->second.timer.async_wait([weak, n](boost::system::error_code ec) {
            if (auto s = weak.lock(); s && !ec)
                s->finish(n, make_error_code(errc::timed_out), s->counts.timed_out);
        });
        op.on_cancel(
            [weak, n](reply_op cancelled) {
                if (auto s = weak.lock())
                    s->finish(n, detail::cancelled_code<error_code>(), s->counts.cancelled);
                cancelled.cancelled();
            },
            boost::asio::cancellation_type::all);
        s->transport->async_publish(std::move(m), [weak, n](error_code ec) {
            if (auto s = weak.lock(); s && ec)
                s->finish(n, ec, s->counts.failed);
        });
    }

    // Ends the request `n` with `ec`, if it still waits.
    void finish(std::uint64_t n, error_code ec, std::atomic<std::uint64_t>& counter) {
        auto it = waiting.find(n);
        if (it == waiting.end())
            return;
        auto p = std::move(it->second);
        waiting.erase(it);
        p.timer.cancel();
        counter.fetch_add(1, std::memory_order_relaxed);
        p.op(ec, message{});
    }

    void fail_all(error_code ec, std::atomic<std::uint64_t>& counter) {
        auto all = std::move(waiting);
        waiting.clear();
        for (auto& [n, p] : all) {
            p.timer.cancel();
            counter.fetch_add(1, std::memory_order_relaxed);
            p.op(ec, message{});
        }
    }

    void on_reply(message&& m) {
        const auto n = correlation_number(m.properties.correlation_id);
        if (n == 0) {
            counts.unknown.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        auto it = waiting.find(n);
        if (it == waiting.end()) {
            counts.late.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        auto p = std::move(it->second);
        waiting.erase(it);
        p.timer.cancel();
        counts.replied.fetch_add(1, std::memory_order_relaxed);
        p.op(error_code{}, std::move(m));
    }

    // The counter of a correlation id this client issued, or 0.
    std::uint64_t correlation_number(const std::optional<std::string>& id) const {
        if (!id || !id->starts_with(prefix))
            return 0;
        const std::string_view digits = std::string_view(*id).substr(prefix.size());
        std::uint64_t n = 0;
        const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
        if (err != std::errc{} || end != digits.data() + digits.size() || n > issued)
            return 0;
        return n;
    }

    static void stop(const std::shared_ptr<state>& s, detail::async_op<void(error_code)> op) {
        s->phase = lifecycle::stopped;
        if (s->retry_timer)
            s->retry_timer->cancel();
        s->stop_watch.emit(boost::asio::cancellation_type::terminal);
        s->fail_all(make_error_code(errc::closed), s->counts.failed);
        if (s->consumer_tag.empty())
            return op(error_code{});
        s->transport->async_cancel(std::exchange(s->consumer_tag, std::string()),
                                   [op](error_code ec) { op(ec); });
    }

    Transport* transport;
    Clock* clock;
    std::optional<std::conditional_t<std::is_default_constructible_v<Clock>, Clock, int>>
        owned_clock;
    std::string queue;
    std::string address; // the requests' reply_to
    reply_route route;
    std::string prefix;
    std::string consumer_tag;
    std::uint64_t issued = 0;
    std::map<std::uint64_t, pending> waiting;
    boost::asio::cancellation_signal stop_watch;
    std::optional<timer_type> retry_timer;
    lifecycle phase = lifecycle::idle;
    counters counts;
};

template <class Transport, class Clock>
request_client<Transport, Clock>::request_client(
    Transport& transport, request_client_options options) requires std::same_as<Clock, steady_clock>
    : state_(std::make_shared<state>(transport, nullptr, std::move(options))) {}

template <class Transport, class Clock>
request_client<Transport, Clock>::request_client(Transport& transport, Clock& clock,
                                                 request_client_options options)
    : state_(std::make_shared<state>(transport, &clock, std::move(options))) {}

template <class Transport, class Clock>
template <class Token>
auto request_client<Transport, Clock>::async_start(Token&& token) {
    return detail::async_start<void(error_code)>(
        std::forward<Token>(token), state_->transport->get_executor(),
        [s = state_](detail::async_op<void(error_code)> op) { state::start(s, std::move(op)); });
}

template <class Transport, class Clock>
template <class Token>
auto request_client<Transport, Clock>::async_request(message request, duration timeout,
                                                     Token&& token) {
    const auto ex = state_->transport->get_executor();
    return detail::async_start_taking<void(error_code, message)>(
        std::forward<Token>(token), ex, ex,
        [s = state_, timeout](message&& m, typename state::reply_op op) {
            state::request(s, std::move(m), timeout, std::move(op));
        },
        std::move(request));
}

template <class Transport, class Clock>
template <class Token>
auto request_client<Transport, Clock>::async_stop(Token&& token) {
    return detail::async_start<void(error_code)>(
        std::forward<Token>(token), state_->transport->get_executor(),
        [s = state_](detail::async_op<void(error_code)> op) { state::stop(s, std::move(op)); });
}

template <class Transport, class Clock>
const std::string& request_client<Transport, Clock>::reply_to() const noexcept {
    return state_->address;
}

template <class Transport, class Clock>
request_client_stats request_client<Transport, Clock>::stats() const noexcept {
    const auto& c = state_->counts;
    auto get = [](const std::atomic<std::uint64_t>& a) {
        return a.load(std::memory_order_relaxed);
    };
    return {get(c.requests), get(c.replied), get(c.timed_out), get(c.cancelled),
            get(c.failed),   get(c.late),    get(c.unknown)};
}

} // namespace letterbox
