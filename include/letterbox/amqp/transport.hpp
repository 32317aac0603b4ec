// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/broker_info.hpp>
#include <letterbox/amqp/detail/transport_state.hpp>
#include <letterbox/amqp/endpoint.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/disconnect_watchers.hpp>
#include <letterbox/detail/settlement.hpp>
#include <letterbox/error.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

/// A `letterbox::transport` (and `letterbox::queue_reader`) on a real RabbitMQ broker, over
/// AMQP 0-9-1 on Boost.Asio: the model the relay and consumers run on in production. It keeps
/// the semantics `in_memory::transport` documents.
///
/// It keeps one connection (see `amqp::connection` for the handshake, heartbeats and close)
/// with a confirm-mode publishing channel, a channel for topology, one channel per consumer
/// (so each has its own `basic.qos` prefetch) and one per queue read with `async_get`.
///
/// Publishing: every publish is `mandatory`; up to `transport_options::publish_window`
/// publishes are in flight (pipelined), more wait. A publish completes when its confirm
/// arrives: success; `errc::no_route` when the broker returned it (`basic.return`, correlated
/// by message-id, exchange and routing key) even though it also acks it; `errc::publish_nacked`
/// on a `basic.nack`; `errc::not_found` for a missing exchange (the broker closes the
/// publishing channel: other unconfirmed publishes complete with `outcome_unknown` and the next
/// publish opens a new channel); `errc::outcome_unknown` for every publish in flight when the
/// connection is lost or closed. Publishes not yet sent when the connection is lost complete
/// with `errc::connection_closed` (they were not sent: safe to publish again).
///
/// Recovery: when the connection is lost (broker restart, `connection.close` from the broker,
/// missed heartbeats, a socket error) the transport reconnects by itself, with a delay that
/// starts at `reconnect_delay_min` and doubles up to `reconnect_delay_max`. On each new
/// connection it declares again every exchange, queue and binding it declared successfully, in
/// the same order, then consumes again with the same consumer tags and options. It never
/// replays a publish. Deliveries of the lost connection can no longer be settled
/// (`errc::channel_closed`): the broker redelivers them. Operations started while it is not
/// connected wait for the next round of connection attempts (at most `reconnect_delay_max`
/// away) and complete with its outcome (`errc::connection_closed` if every attempt failed).
///
/// Failover: a URL with several endpoints (`amqp://h1,h2:5673/`, `url::set_endpoints`), the
/// nodes of one cluster, is tried one endpoint at a time, in an order shuffled once when the
/// transport is made (`transport_options::shuffle_endpoints`, `endpoint_shuffle_seed`). A
/// failed connect moves on to the next endpoint at once; a lost connection too; the backoff
/// delay comes only after a round, one attempt on each endpoint. Each connection recovers the
/// topology and consumers as above. `connected_endpoint()` says which endpoint is in use.
/// Credentials, vhost and TLS settings are shared; TLS checks each endpoint's own host (or
/// `server_name_indication`). See docs/amqp.md, "Failover".
///
/// While the broker blocks publishing (`connection.blocked`, a resource alarm) publishes wait
/// in the transport until `connection.unblocked`. Settling a delivery tag twice, or one never
/// delivered, completes with `errc::precondition_failed` (the broker closes that channel, as
/// RabbitMQ does, and its consumer subscribes again).
///
/// Direct reply-to: a consumer of `amq.rabbitmq.reply-to` (`topology::direct_reply_to`) goes on
/// the publishing channel, the only one on which RabbitMQ takes a request naming it as
/// `reply_to`; one per transport (a second completes with `errc::precondition_failed`), taken
/// along to every new publishing channel. A publish to a reply address on the default exchange
/// goes without `mandatory` (RabbitMQ delivers it and returns it too).
///
/// Errors from the broker on a channel (404, 406, ...) complete the operation that caused
/// them with the reply code's `errc` and never kill the connection: the channel is replaced.
///
/// Every operation is posted to the transport's strand and completes through the token's
/// associated executor (by default `get_executor()`). Delivery handlers run on the strand,
/// one delivery at a time per consumer, and only after the consumer's `async_consume`
/// completion has run.
///
/// `amqps://` URLs use TLS (see `amqp::connection`).
///
/// Broker version: at each connection the transport reads the broker's `product` and `version`
/// from `connection.start` and picks the `in_memory::broker_profile` of that version
/// (`in_memory::profile_for_version`); `broker()` returns them. The observer
/// (`transport_options::on_event`) hears of each connection's broker, and is warned when
/// letterbox has no profile for the version (it assumes the nearest) and when the version
/// changed since the previous connection. `ops::connection_check` shows them on the health
/// endpoint. See docs/amqp.md, "Broker version".
///
/// Thread safety: the object may be used from any thread. The executor must outlive it.
/// Destroying it closes the connection (without waiting).
class transport {
public:
    using transport_concept = transport_tag;
    using executor_type = boost::asio::any_io_executor;

    /// A transport that connects to `u` at once (in the background): to one of its endpoints,
    /// failing over to the others (see above).
    transport(executor_type ex, url u, transport_options options = {})
        : ex_(std::move(ex))
        , state_(std::make_shared<detail::transport_state>(ex_, std::move(u), std::move(options))) {
        boost::asio::dispatch(state_->strand(), [s = state_] { s->start(); });
    }
    /// Parses `url_text` (`parse_url`: throws `letterbox::error` when invalid).
    transport(executor_type ex, std::string_view url_text, transport_options options = {})
        : transport(std::move(ex), parse_url(url_text), std::move(options)) {}

    transport(transport&&) noexcept = default;
    transport& operator=(transport&& other) noexcept {
        if (this != &other) {
            close_in_background();
            ex_ = std::move(other.ex_);
            state_ = std::move(other.state_);
        }
        return *this;
    }
    transport(const transport&) = delete;
    transport& operator=(const transport&) = delete;
    ~transport() { close_in_background(); }

    executor_type get_executor() const { return ex_; }

    template <class Token>
    auto async_declare(const topology::exchange& x, Token&& token) {
        return run<void(error_code)>(std::forward<Token>(token),
                                     [x](auto& s, auto done) { s.declare(x, std::move(done)); });
    }
    template <class Token>
    auto async_declare(const topology::queue& q, Token&& token) {
        return run<void(error_code)>(std::forward<Token>(token),
                                     [q](auto& s, auto done) { s.declare(q, std::move(done)); });
    }
    template <class Token>
    auto async_bind(const topology::binding& b, Token&& token) {
        return run<void(error_code)>(std::forward<Token>(token),
                                     [b](auto& s, auto done) { s.bind(b, std::move(done)); });
    }

    /// Publishes `m` (mandatory, with confirms) to `m.exchange` with `m.routing_key`. A message
    /// whose id is nil is published with a fresh time-ordered id; `m` itself is not changed.
    template <class Token>
    auto async_publish(const message& m, Token&& token) {
        return run<void(error_code)>(std::forward<Token>(token), [m](auto& s, auto done) {
            // Handed to the connection: whether it reached the broker is not known.
            done.on_cancel([](auto cancelled) { cancelled(errc::outcome_unknown); });
            s.publish(std::move(m), std::move(done));
        });
    }

    /// Starts a consumer; completes with its tag. `on_delivery` runs for each delivery.
    template <class Token>
    auto async_consume(const consume_options& o, std::function<void(delivery)> on_delivery,
                       Token&& token);

    /// `basic.get` from `queue` with manual acknowledgement: the delivery, or `std::nullopt`
    /// when no message is ready; `errc::not_found` when the queue is missing.
    template <class Token>
    auto async_get(const std::string& queue, Token&& token) {
        return run<void(error_code, std::optional<delivery>)>(
            std::forward<Token>(token), [queue](auto& s, auto done) {
                s.get(queue, [&s, done](std::error_code ec, std::optional<delivery> d) {
                    // A message that arrives after the get was cancelled goes back at once.
                    if (done.done() && d)
                        return s.settle(d->channel, d->delivery_tag,
                                        letterbox::detail::settlement::nack, true,
                                        [](std::error_code) {});
                    done(ec, std::move(d));
                });
            });
    }

    /// The number of ready messages in `queue` (a passive `queue.declare`); `errc::not_found`
    /// when the queue is missing.
    template <class Token>
    auto async_queue_depth(const std::string& queue, Token&& token) {
        return run<void(error_code, std::uint32_t)>(
            std::forward<Token>(token),
            [queue](auto& s, auto done) { s.depth(queue, std::move(done)); });
    }

    template <class Token>
    auto async_cancel(const std::string& consumer_tag, Token&& token) {
        return run<void(error_code)>(
            std::forward<Token>(token),
            [consumer_tag](auto& s, auto done) { s.cancel(consumer_tag, std::move(done)); });
    }
    template <class Token>
    auto async_ack(const delivery& d, Token&& token) {
        return settle(d, letterbox::detail::settlement::ack, false, std::forward<Token>(token));
    }
    template <class Token>
    auto async_nack(const delivery& d, bool requeue, Token&& token) {
        return settle(d, letterbox::detail::settlement::nack, requeue, std::forward<Token>(token));
    }
    template <class Token>
    auto async_reject(const delivery& d, bool requeue, Token&& token) {
        return settle(d, letterbox::detail::settlement::reject, requeue,
                      std::forward<Token>(token));
    }

    /// Closes the connection: publishes awaiting a confirm complete with `outcome_unknown`,
    /// unacknowledged deliveries are requeued by the broker. Idempotent.
    template <class Token>
    auto async_close(Token&& token) {
        return run<void(error_code)>(std::forward<Token>(token),
                                     [](auto& s, auto done) { s.close(std::move(done)); });
    }

    /// Completes when the connection is lost (`connection_watcher`): with success at the next
    /// loss (a broker restart, missed heartbeats, a socket error, `connection.close` from the
    /// broker), before the transport reconnects; with `errc::closed` at `async_close`; with
    /// `operation_aborted` when cancelled through the token's slot (any type).
    template <class Token>
    auto async_wait_disconnected(Token&& token) {
        return run<void(error_code)>(std::forward<Token>(token), [](auto& s, auto op) {
            letterbox::detail::start_wait_disconnected(s, std::move(op));
        });
    }

    /// Whether the transport is connected to the broker now: its connection is open and its
    /// topology and consumers recovered. False while it connects, reconnects or after
    /// `async_close`. For readiness checks: callable from any thread, never blocks; the answer
    /// may be stale by the time it is read.
    bool is_connected() const noexcept { return state_ && state_->connected(); }

    /// The endpoint (one of the URL's `endpoints()`) the transport is connected to now, as
    /// `is_connected()` tells; `std::nullopt` while it connects, reconnects or after
    /// `async_close`. Callable from any thread, never blocks; the answer may be stale by the
    /// time it is read.
    std::optional<endpoint> connected_endpoint() const {
        return state_ ? state_->connected_endpoint() : std::nullopt;
    }

    /// The broker of the latest connection: its product and version as its `connection.start`
    /// announced them, and the broker profile letterbox assumes for it (`profile`, with `exact`
    /// false and a `note` when the version has no profile of its own). `std::nullopt` until a
    /// first connection opened; after that, kept while the transport reconnects and replaced at
    /// each new connection (a failover may reach a node of another version). Callable from any
    /// thread and never waits for the strand (a lock is held only to copy the value); the
    /// answer may be stale by the time it is read.
    std::optional<broker_info> broker() const { return state_ ? state_->broker() : std::nullopt; }

    /// How many times the broker closed one of the transport's consumer or get channels
    /// because a delivery on it stayed unacknowledged past RabbitMQ's consumer timeout
    /// (`consumer_timeout`, 30 minutes by default): 406 PRECONDITION_FAILED `delivery
    /// acknowledgement on channel N timed out...`. The broker requeued what the channel held
    /// and a consumer consumed again on a new channel, so the delivery comes back redelivered
    /// while its first handling may still run. `ops::letterbox_metrics::watch_transport`
    /// exports it as `letterbox_consumer_timeouts_total`. Callable from any thread.
    std::uint64_t consumer_timeouts() const noexcept {
        return state_ ? state_->consumer_timeouts() : 0;
    }

    /// Drops the current connection as a network failure would (no close handshake), to
    /// exercise recovery; the transport then reconnects as after any lost connection.
    void simulate_connection_loss() {
        boost::asio::dispatch(state_->strand(), [s = state_] { s->drop_connection(); });
    }

private:
    template <class Token>
    auto settle(const delivery& d, letterbox::detail::settlement how, bool requeue, Token&& token) {
        return run<void(error_code)>(
            std::forward<Token>(token),
            [ch = d.channel, tag = d.delivery_tag, how, requeue](auto& s, auto done) {
                s.settle(ch, tag, how, requeue, std::move(done));
            });
    }

    template <class Signature, class Token, class Op>
    auto run(Token&& token, Op op);

    void close_in_background() {
        if (state_)
            boost::asio::dispatch(state_->strand(),
                                  [s = state_] { s->close([](std::error_code) {}); });
    }

    executor_type ex_;
    std::shared_ptr<detail::transport_state> state_;
};

} // namespace letterbox::amqp

#include <letterbox/amqp/impl/transport.hpp>
