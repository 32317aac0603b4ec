// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/basic_properties.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>
#include <letterbox/transport/in_memory/handlers.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

namespace detail {
class transport_state;
} // namespace detail

/// A channel on the in-memory broker: the AMQP 0-9-1 methods, synchronous.
///
/// Each method returns at once with the broker's answer. Protocol errors close the channel as
/// RabbitMQ does (the error is returned, `close_reason()` holds the reply text and the
/// `on_close` handler runs); every later call returns `errc::channel_closed`. Deliveries,
/// confirms, returns and cancellations reach their handlers when the broker operation that
/// caused them has finished, in the order they happened; a handler may call the broker.
///
/// A `channel` is a cheap handle: copies refer to the same channel.
///
/// Thread safety: none. Call the broker's objects from its executor only (one thread, or a
/// strand).
class channel {
public:
    channel() = default;

    std::uint64_t id() const noexcept { return state_->id; }
    /// The channel number on the wire, as `amqp::transport`'s connection numbers its channels:
    /// the next number no open channel of the connection has, after the one handed out last
    /// (1 for the first; a closed number is not reused at once). Reply texts name it.
    std::uint16_t number() const noexcept { return state_->number; }
    bool is_open() const noexcept { return state_ && state_->open; }
    /// Why the channel closed (empty while open).
    const in_memory::close_reason& close_reason() const noexcept { return state_->reason; }

    // -- exchanges and queues --------------------------------------------------------------
    std::error_code exchange_declare(const topology::exchange& x, bool passive = false) {
        return b_->exchange_declare(*state_, x, passive);
    }
    std::error_code exchange_delete(std::string_view name, bool if_unused = false) {
        return b_->exchange_delete(*state_, name, if_unused);
    }
    /// `exchange.bind`: routes what `source` matches into `destination`.
    std::error_code exchange_bind(std::string destination, std::string source, std::string key,
                                  field_table arguments = {}) {
        return b_->bind(
            *state_,
            e2e(std::move(destination), std::move(source), std::move(key), std::move(arguments)),
            false);
    }
    std::error_code exchange_unbind(std::string destination, std::string source, std::string key,
                                    field_table arguments = {}) {
        return b_->bind(
            *state_,
            e2e(std::move(destination), std::move(source), std::move(key), std::move(arguments)),
            true);
    }
    queue_declare_ok queue_declare(const topology::queue& q, std::error_code& ec,
                                   bool passive = false) {
        return b_->queue_declare(*state_, q, passive, ec);
    }
    std::error_code queue_declare(const topology::queue& q) {
        std::error_code ec;
        b_->queue_declare(*state_, q, false, ec);
        return ec;
    }
    std::error_code queue_bind(std::string queue, std::string exchange, std::string key,
                               field_table arguments = {}) {
        return b_->bind(
            *state_, {std::move(exchange), std::move(queue), std::move(key), std::move(arguments)},
            false);
    }
    std::error_code queue_unbind(std::string queue, std::string exchange, std::string key,
                                 field_table arguments = {}) {
        return b_->bind(
            *state_, {std::move(exchange), std::move(queue), std::move(key), std::move(arguments)},
            true);
    }
    /// Removes the ready messages (not the unacknowledged ones); returns how many.
    std::size_t queue_purge(std::string_view queue, std::error_code& ec) {
        return b_->queue_purge(*state_, queue, ec);
    }
    std::size_t queue_delete(std::string_view queue, std::error_code& ec, bool if_unused = false,
                             bool if_empty = false) {
        return b_->queue_delete(*state_, queue, if_unused, if_empty, ec);
    }

    // -- basic -----------------------------------------------------------------------------
    /// `basic.qos`. `global == false` sets the prefetch of consumers created afterwards.
    std::error_code basic_qos(std::uint16_t prefetch, bool global = false) {
        return b_->basic_qos(*state_, prefetch, global);
    }
    /// `confirm.select`: from now on every publish gets a sequence number (from 1) and one
    /// confirm.
    std::error_code confirm_select() { return b_->confirm_select(*state_); }
    /// The sequence number the next publish will get in confirm mode.
    std::uint64_t next_publish_seq() const noexcept { return state_->next_seq; }
    /// `basic.publish` to `msg.exchange` with `msg.routing_key`, as letterbox publishes it
    /// (`to_basic_properties(msg)`). The message is published as it is: a nil id stays nil
    /// (only `in_memory::transport::async_publish` assigns ids).
    std::error_code basic_publish(message msg, bool mandatory = false) {
        return b_->basic_publish(*state_, std::move(msg), mandatory);
    }
    /// `basic.publish` of a foreign publisher: `body` with the raw AMQP `properties` that, say, a
    /// Node.js or Python client sends (no message-id, any message-id text, no headers). The broker
    /// holds and delivers the message that `to_message(properties, body)` makes, the one
    /// `amqp::transport` receives for the same publish on RabbitMQ: a message-id that is not a
    /// canonical UUID becomes `foreign_message_id(text)` with the text in the header
    /// `foreign_message_id_header`, and no message-id gives the nil id. What a message cannot
    /// hold (an empty header table or `type` versus an absent one, delivery modes other than 1
    /// and 2) is gone from then on, for routing as for the consumer.
    std::error_code basic_publish(std::string exchange, std::string routing_key,
                                  const basic_properties& properties, std::string body,
                                  bool mandatory = false) {
        auto msg = to_message(properties, std::move(body));
        msg.exchange = std::move(exchange);
        msg.routing_key = std::move(routing_key);
        return b_->basic_publish(*state_, std::move(msg), mandatory);
    }
    /// `basic.consume`; returns the consumer tag. The prefetch is the channel's current
    /// `basic_qos(n, false)`.
    std::string basic_consume(std::string_view queue, delivery_callback on_delivery,
                              std::error_code& ec, basic_consume_options opts = {},
                              cancel_handler on_cancel = {}) {
        return b_->basic_consume(*state_, queue, std::move(opts), std::move(on_delivery),
                                 std::move(on_cancel), ec);
    }
    /// `basic.cancel`: stops deliveries; unacknowledged deliveries stay unacknowledged.
    std::error_code basic_cancel(std::string_view consumer_tag) {
        return b_->basic_cancel(*state_, consumer_tag);
    }
    /// `basic.get`; `std::nullopt` with no error means `get-empty`.
    std::optional<basic_delivery> basic_get(std::string_view queue, std::error_code& ec,
                                            bool no_ack = false) {
        return b_->basic_get(*state_, queue, no_ack, ec);
    }
    /// `basic.ack`. `delivery_tag == 0` with `multiple` acks everything outstanding.
    std::error_code basic_ack(std::uint64_t delivery_tag, bool multiple = false) {
        return b_->settle(*state_, delivery_tag, multiple, true, false, detail::return_kind::nack);
    }
    std::error_code basic_nack(std::uint64_t delivery_tag, bool multiple = false,
                               bool requeue = true) {
        return b_->settle(*state_, delivery_tag, multiple, false, requeue,
                          detail::return_kind::nack);
    }
    std::error_code basic_reject(std::uint64_t delivery_tag, bool requeue = true) {
        return b_->settle(*state_, delivery_tag, false, false, requeue,
                          detail::return_kind::reject);
    }
    /// `basic.recover(requeue=true)`. RabbitMQ refuses `requeue=false` with 540
    /// NOT_IMPLEMENTED, a hard error that closes the whole connection.
    std::error_code basic_recover(bool requeue = true) {
        return b_->basic_recover(*state_, requeue);
    }
    /// How many deliveries on this channel await settlement.
    std::size_t unacked_count() const noexcept { return state_->live_unacked; }

    // -- asynchronous notifications ----------------------------------------------------------
    void on_confirm(confirm_handler h) { state_->on_confirm = std::move(h); }
    void on_return(return_handler h) { state_->on_return = std::move(h); }
    void on_close(close_handler h) { state_->on_close = std::move(h); }

    /// `channel.close` by the client: unacknowledged deliveries are requeued.
    void close() {
        b_->close_channel(*state_, {make_error_code(errc::closed), "closed by the client"});
    }

private:
    friend class connection;
    friend class detail::transport_state;

    // `basic_publish` of a message the caller gives up, without the move into a by-value
    // parameter (`in_memory::transport` publishes every message through it).
    std::error_code publish_moved(message&& msg, bool mandatory) {
        return b_->basic_publish(*state_, std::move(msg), mandatory);
    }
    channel(std::shared_ptr<detail::broker_state> b, std::shared_ptr<detail::channel_state> s)
        : b_(std::move(b))
        , state_(std::move(s)) {}

    static topology::binding e2e(std::string destination, std::string source, std::string key,
                                 field_table args) {
        return {std::move(source), std::move(destination), std::move(key), std::move(args),
                topology::destination_kind::exchange};
    }

    std::shared_ptr<detail::broker_state> b_;
    std::shared_ptr<detail::channel_state> state_;
};

} // namespace letterbox::in_memory
