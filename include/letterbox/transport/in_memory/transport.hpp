// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/detail/disconnect_watchers.hpp>
#include <letterbox/detail/settlement.hpp>
#include <letterbox/error.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/detail/transport_state.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/dispatch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// A `transport` over the in-memory RabbitMQ model: what unit and property tests, teaching
/// examples and simulations run on.
///
/// It opens one connection with a confirm-mode publishing channel, a channel for topology,
/// and one channel per consumer (so each consumer has its own prefetch). Publishes are
/// `mandatory`; a publish completes when its confirm arrives: success, `errc::no_route` after
/// a return, `errc::publish_nacked`, or `errc::outcome_unknown` when the connection drops
/// first. After a lost connection (`broker::sever_all`, `broker::restart`) it reconnects and
/// re-creates its consumers, as a RabbitMQ client with automatic recovery does; deliveries
/// from the lost channels can no longer be settled (`errc::channel_closed`) and are
/// redelivered. While the broker is down (`broker::go_down`), every operation that needs the
/// connection tries to reconnect once and completes at once with `errc::connection_closed`
/// (never hangs); when the broker comes back (`broker::come_back`) it reconnects by itself,
/// restores its consumers, and its next operations succeed.
///
/// It also models `queue_reader`: `async_get` fetches with manual acknowledgement on a channel
/// of its own per queue (a failed get closes only that queue's channel, as a 404 does on
/// RabbitMQ), and fetched messages are settled with `async_ack`, `async_nack` and
/// `async_reject` like consumed ones; unsettled ones return to their queue when the connection
/// is lost or closed. `async_queue_depth` is a passive `queue.declare` on the topology channel,
/// which is reopened after the 404 of a missing queue.
///
/// Direct reply-to goes as on `amqp::transport`: a consumer of `amq.rabbitmq.reply-to` runs on
/// the publishing channel (one per transport), and a reply to an address is published without
/// `mandatory`. `async_wait_disconnected` models `connection_watcher`.
///
/// Every operation is posted to the broker's executor (it starts after the caller's handler
/// returns, as a request on a socket would, so a consumer that nacks with requeue inside its
/// delivery handler cannot spin the broker inside one handler) and completes through the
/// token's associated executor. Delivery handlers run on the broker's executor, one delivery at
/// a time, and only after the consumer's `async_consume` completion has run.
///
/// Thread safety: the object may be used from any thread as long as the broker's executor is
/// single-threaded or a strand; the broker must outlive it.
class transport {
public:
    using transport_concept = transport_tag;
    using executor_type = boost::asio::any_io_executor;

    explicit transport(in_memory::broker& b, std::string name = "letterbox")
        : state_(std::make_shared<in_memory::detail::transport_state>(b, std::move(name))) {
        boost::asio::dispatch(state_->executor(), [s = state_] { s->start(); });
    }

    executor_type get_executor() const { return state_->executor(); }

    /// The RabbitMQ version its broker models (`broker_options::profile`), as an
    /// `amqp::transport` tells the version of its broker (`broker()`): what the topology check of
    /// a `receive_endpoint` assumes.
    const broker_profile& profile() const noexcept { return state_->profile(); }

    template <class Token>
    auto async_declare(const topology::exchange& x, Token&& token) {
        return run(std::forward<Token>(token), [x](auto& s) { return s.declare(x); });
    }
    template <class Token>
    auto async_declare(const topology::queue& q, Token&& token) {
        return run(std::forward<Token>(token), [q](auto& s) { return s.declare(q); });
    }
    template <class Token>
    auto async_bind(const topology::binding& b, Token&& token) {
        return run(std::forward<Token>(token), [b](auto& s) { return s.bind(b); });
    }

    /// Publishes `m` (mandatory, with confirms) to `m.exchange` with `m.routing_key`. A message
    /// whose id is nil is published with a fresh id, the next of the broker's seeded sequence
    /// (`broker::generate_message_id`); `m` itself is not changed. A message passed as an rvalue
    /// is moved into the broker instead of copied.
    template <class Token>
    auto async_publish(const message& m, Token&& token) {
        return publish(std::forward<Token>(token), message(m));
    }
    template <class Token>
    auto async_publish(message&& m, Token&& token) {
        return publish(std::forward<Token>(token), std::move(m));
    }

    /// Starts a consumer; completes with its tag. `on_delivery` runs for each delivery.
    template <class Token>
    auto async_consume(const consume_options& o, std::function<void(delivery)> on_delivery,
                       Token&& token) {
        return start<void(error_code, std::string)>(
            std::forward<Token>(token), [o, cb = std::move(on_delivery)](auto& s, auto op) mutable {
                std::error_code ec;
                auto sub = s.consume(o, std::move(cb), ec);
                std::string tag = sub ? sub->options.consumer_tag : std::string();
                // Deliveries wait until the completion has run (the concept).
                op.complete_then(
                    [s = s.shared_from_this(), sub] {
                        if (sub)
                            s->start_delivering(sub);
                    },
                    ec, std::move(tag));
            });
    }

    /// `basic.get` from `queue` with manual acknowledgement: completes with the delivery, or
    /// `std::nullopt` when no message is ready; `errc::not_found` when the queue is missing.
    template <class Token>
    auto async_get(const std::string& queue, Token&& token) {
        return start<void(error_code, std::optional<delivery>)>(std::forward<Token>(token),
                                                                [queue](auto& s, auto op) {
                                                                    std::error_code ec;
                                                                    auto d = s.get(queue, ec);
                                                                    op(ec, std::move(d));
                                                                });
    }

    /// The number of ready messages in `queue` (a passive `queue.declare`); `errc::not_found`
    /// when the queue is missing.
    template <class Token>
    auto async_queue_depth(const std::string& queue, Token&& token) {
        return start<void(error_code, std::uint32_t)>(std::forward<Token>(token),
                                                      [queue](auto& s, auto op) {
                                                          std::error_code ec;
                                                          const auto ready = s.depth(queue, ec);
                                                          op(ec, ready);
                                                      });
    }

    template <class Token>
    auto async_cancel(const std::string& consumer_tag, Token&& token) {
        return run(std::forward<Token>(token),
                   [consumer_tag](auto& s) { return s.cancel(consumer_tag); });
    }
    template <class Token>
    auto async_ack(const delivery& d, Token&& token) {
        return settle(std::forward<Token>(token), d, letterbox::detail::settlement::ack, false);
    }
    template <class Token>
    auto async_nack(const delivery& d, bool requeue, Token&& token) {
        return settle(std::forward<Token>(token), d, letterbox::detail::settlement::nack, requeue);
    }
    template <class Token>
    auto async_reject(const delivery& d, bool requeue, Token&& token) {
        return settle(std::forward<Token>(token), d, letterbox::detail::settlement::reject,
                      requeue);
    }

    /// Whether the transport is connected to the broker now: false before its first connection
    /// (made on the executor), while the broker is down or a lost connection is not yet
    /// replaced, and after `async_close`. For readiness checks: callable from any thread, never
    /// blocks; the answer may be stale by the time it is read.
    bool is_connected() const noexcept { return state_ && state_->connected(); }

    /// Completes when the connection is lost (`connection_watcher`): with success at the next
    /// loss (a fault, a broker restart), before the transport connects again; with
    /// `errc::closed` at `async_close`; with `operation_aborted` when cancelled through the
    /// token's slot (any type).
    template <class Token>
    auto async_wait_disconnected(Token&& token) {
        return start<void(error_code)>(std::forward<Token>(token), [](auto& s, auto op) {
            letterbox::detail::start_wait_disconnected(s, std::move(op));
        });
    }

    /// How many times the broker closed one of the transport's consumer or get channels
    /// because a delivery on it stayed unacknowledged past the consumer timeout (RabbitMQ's
    /// `consumer_timeout`, `broker_profile::consumer_timeout`): 406 PRECONDITION_FAILED
    /// `delivery acknowledgement on channel N timed out...`. Each time the broker requeued
    /// what the channel held, and a consumer consumed again on a new channel, so the delivery
    /// comes back redelivered while its first handling may still run: an effect it has must be
    /// idempotent (the inbox). `ops::letterbox_metrics::watch_transport` exports it as
    /// `letterbox_consumer_timeouts_total`. Callable from any thread.
    std::uint64_t consumer_timeouts() const noexcept {
        return state_ ? state_->consumer_timeouts() : 0;
    }

    /// Closes the connection: pending publishes complete with `outcome_unknown`,
    /// unacknowledged deliveries are requeued. Idempotent.
    template <class Token>
    auto async_close(Token&& token) {
        return run(std::forward<Token>(token), [](auto& s) {
            s.close();
            return std::error_code{};
        });
    }

private:
    // Settling needs the channel and the tag only: the message is not copied into the operation.
    template <class Token>
    auto settle(Token&& token, const delivery& d, letterbox::detail::settlement how, bool requeue) {
        return run(std::forward<Token>(token),
                   [channel = d.channel, tag = d.delivery_tag, how, requeue](auto& s) {
                       return s.settle(channel, tag, how, requeue);
                   });
    }

    // Not through `start`: the message is moved once into the operation's state, and from
    // there into the broker.
    template <class Token>
    auto publish(Token&& token, message&& m) {
        const auto ex = state_->executor();
        return letterbox::detail::async_start_taking<void(error_code)>(
            std::forward<Token>(token), ex, ex,
            [s = state_](message&& m, letterbox::detail::async_op<void(error_code)> op) {
                // The message is the broker's once this runs: a cancelled wait for its
                // confirm cannot say whether it was routed.
                op.on_cancel([](auto cancelled) { cancelled(errc::outcome_unknown); });
                s->publish(std::move(m), std::move(op));
            },
            std::move(m));
    }

    // Every operation, through the operation base (detail/async_op.hpp): `f(state, op)` runs on
    // the broker's executor and completes `op`.
    template <class Signature, class Token, class F>
    auto start(Token&& token, F&& f) {
        const auto ex = state_->executor();
        return letterbox::detail::async_start_with<Signature>(std::forward<Token>(token), ex, ex,
                                                              state_, std::forward<F>(f));
    }

    // An operation that completes as soon as it ran: `op(state)` returns its error code.
    template <class Token, class Op>
    auto run(Token&& token, Op op) {
        return start<void(error_code)>(
            std::forward<Token>(token),
            [op = std::move(op)](auto& s, auto done) mutable { done(op(s)); });
    }

    std::shared_ptr<in_memory::detail::transport_state> state_;
};

} // namespace letterbox::in_memory
