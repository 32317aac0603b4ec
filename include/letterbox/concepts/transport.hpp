// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The opt-in tag of `transport`: a model declares `using transport_concept = transport_tag;`.
struct transport_tag {};

namespace detail {
// Completion handlers used to probe asynchronous operations in the concept. Any Asio
// completion token works with a model; the concept checks the plain-callback form.
struct error_completion {
    void operator()(error_code) const {}
};
struct consume_completion {
    void operator()(error_code, std::string) const {}
};
struct delivery_sink {
    void operator()(delivery) const {}
};
struct get_completion {
    void operator()(error_code, std::optional<delivery>) const {}
};
struct depth_completion {
    void operator()(error_code, std::uint32_t) const {}
};
} // namespace detail

/// `T` declares that it keeps the semantic contract of `transport`.
template <class T>
concept transport_opted_in = std::derived_from<typename T::transport_concept, transport_tag>;

/// `T` declares exchanges and queues and binds them, asynchronously.
template <class T>
concept topology_declarer = requires(T& t, const topology::exchange& x, const topology::queue& q,
                                     const topology::binding& b) {
    t.async_declare(x, detail::error_completion{});
    t.async_declare(q, detail::error_completion{});
    t.async_bind(b, detail::error_completion{});
};

/// `T` publishes messages and completes each publish when its outcome is known.
template <class T>
concept publisher = requires(T& t, const message& m) {
    t.async_publish(m, detail::error_completion{});
};

/// `T` starts and cancels consumers that push deliveries to a handler.
template <class T>
concept subscriber = requires(T& t, const consume_options& o, const std::string& tag) {
    t.async_consume(o, detail::delivery_sink{}, detail::consume_completion{});
    t.async_cancel(tag, detail::error_completion{});
};

/// `T` settles deliveries: ack, nack and reject, each with or without requeue.
template <class T>
concept acknowledger = requires(T& t, const delivery& d, bool requeue) {
    t.async_ack(d, detail::error_completion{});
    t.async_nack(d, requeue, detail::error_completion{});
    t.async_reject(d, requeue, detail::error_completion{});
};

/// A connection to a message broker that publishes with confirms, consumes with manual
/// acknowledgement and declares topology: what letterbox's relay, middleware and consumers
/// need from RabbitMQ or from its in-memory model.
///
/// Requirements, for `t` of type `T&` (every `async_` operation takes an Asio completion
/// token and completes on the token's associated executor, defaulting to `t.get_executor()`):
/// 1. `T::transport_concept` names `transport_tag` (opt-in);
/// 2. `T::executor_type`, and `t.get_executor()`;
/// 3. `t.async_declare(exchange|queue, tok)` and `t.async_bind(binding, tok)` complete with
///    `void(error_code)`;
/// 4. `t.async_publish(msg, tok)` completes with `void(error_code)`;
/// 5. `t.async_consume(options, on_delivery, tok)` completes with
///    `void(error_code, std::string consumer_tag)`; `on_delivery(delivery)` is then
///    called for each delivery; `t.async_cancel(tag, tok)` stops it;
/// 6. `t.async_ack(d, tok)`, `t.async_nack(d, requeue, tok)`, `t.async_reject(d, requeue, tok)`;
/// 7. `t.async_close(tok)`.
///
/// Semantics (what the syntax cannot say):
/// - **Publish means confirmed and routed.** A publish completes with success only when the
///   broker confirmed it *and* routed it to at least one queue (published `mandatory`): an
///   unroutable message completes with `errc::no_route` even though the broker also acks it.
///   A refused one completes with `errc::publish_nacked`. When the connection is lost before
///   the confirm, it completes with `errc::outcome_unknown`, never with success.
/// - **At-least-once delivery.** A delivery that is not acked is redelivered (with
///   `redelivered` set) after a nack or reject with requeue, or when its consumer's channel or
///   connection closes. A nack or reject without requeue dead-letters it if the queue has a
///   dead-letter exchange, and drops it otherwise.
/// - **Ordering.** Deliveries from one queue to one consumer arrive in queue order; no order
///   is promised across queues or across competing consumers.
/// - `on_delivery` is called on the transport's executor, one delivery at a time per consumer.
/// - Cancelling a consumer does not requeue its unacknowledged deliveries; they can still be
///   settled.
/// - `async_close` is idempotent; it completes pending publishes with `outcome_unknown` and
///   requeues unacknowledged deliveries.
///
/// Does not require: exactly-once delivery, durability (see the model's features), thread
/// safety of one object across threads (use a strand), or any particular error for declaring
/// an existing entity with different properties (RabbitMQ says 406).
///
/// Models: `in_memory::transport`; `amqp::transport` (component `letterbox::amqp`).
/// Archetype: `letterbox::testing::transport_archetype`. Conformance suite:
/// `letterbox/testing/transport_suite.hpp`.
template <class T>
concept transport = transport_opted_in<T> && std::movable<T> && requires(T& t) {
    typename T::executor_type;
    { t.get_executor() } -> std::convertible_to<typename T::executor_type>;
    t.async_close(detail::error_completion{});
} && topology_declarer<T> && publisher<T> && subscriber<T> && acknowledger<T>;

/// `T` fetches one message at a time from a queue (`basic.get`, manual acknowledgement).
template <class T>
concept message_getter = requires(T& t, const std::string& queue) {
    t.async_get(queue, detail::get_completion{});
};

/// `T` reports how many messages are ready in a queue (a passive `queue.declare`).
template <class T>
concept queue_depth_reader = requires(T& t, const std::string& queue) {
    t.async_queue_depth(queue, detail::depth_completion{});
};

/// A `transport` that can also read a queue on demand instead of subscribing to it: what
/// letterbox's dead-letter operations (`dlq::dead_letter_queue`, `dlq::depth_gauge`) need to
/// browse, replay and purge a dead-letter queue and to watch its depth. An optional
/// refinement: a transport that does not model it still runs every other component.
///
/// Requirements, for `t` of type `T&` and `queue` a `const std::string&`, on top of those of
/// `transport` (same completion-token and executor rules):
/// 1. `t.async_get(queue, tok)` completes with
///    `void(error_code, std::optional<delivery>)`;
/// 2. `t.async_queue_depth(queue, tok)` completes with
///    `void(error_code, std::uint32_t ready)`.
///
/// Semantics (what the syntax cannot say):
/// - **A get is a delivery with manual acknowledgement.** `async_get` takes the message at
///   the head of `queue` and hands it out unacknowledged, exactly like a consumer's delivery:
///   settle it with the same transport's `async_ack`, `async_nack` or `async_reject`.
///   `std::nullopt` with success means the queue had no ready message (`basic.get-empty`).
///   `delivery::consumer_tag` is empty.
/// - **Unsettled gets come back.** A fetched message that is not acked returns to its queue
///   (marked `redelivered`) after a nack or reject with requeue, or when the channel or
///   connection it was fetched on closes, `async_close` included. That is what makes a
///   scan over a queue safe to interrupt at any point.
/// - **Requeue keeps the position on classic queues.** A message nacked with requeue goes
///   back to its original position (RabbitMQ classic queues and the model; quorum queues
///   may put it elsewhere, see the model's profile).
/// - **Depth counts ready messages only**, not the unacknowledged ones (what a passive
///   `queue.declare` returns as `message-count`). A missing queue completes with
///   `errc::not_found`; the transport stays usable afterwards (a real AMQP client must open a
///   new channel, since the failed declare closes the one it used).
/// - A get on a missing queue also completes with `errc::not_found`, and leaves the unsettled
///   deliveries fetched from other queues unsettled (so a model that fetches over AMQP uses a
///   channel per queue, or at least not one shared with other queues' gets).
/// - **A get sees the transport's own requeues; a depth may not.** Once a nack or reject
///   with requeue of a message fetched from `queue` has completed, the next get from `queue`
///   on the same transport can fetch that message, and its `delivery::message_count`, when
///   given, counts it among the messages left ready. A depth is a snapshot that may lag
///   behind: RabbitMQ answers a passive `queue.declare` ahead of the requeues still waiting
///   in the queue's mailbox. So whatever must see a whole queue (a dead-letter scan) takes its
///   bound from a get, and asks for a depth only when the get gives no count.
///
/// Does not require: a message count with each get (`delivery::message_count` is optional),
/// a consistent snapshot (the queue may change between a depth and the next get), or any
/// ordering across queues.
///
/// Models: `in_memory::transport`; `amqp::transport`. Archetype:
/// `letterbox::testing::queue_reader_archetype`. Conformance: the `async_get`/`async_queue_depth`
/// cases of `letterbox/testing/transport_suite.hpp`, which run only for models of `queue_reader`.
template <class T>
concept queue_reader = transport<T> && message_getter<T> && queue_depth_reader<T>;

/// A `transport` that tells when its connection is lost: what a `request_client` needs to end
/// its waiting requests at once instead of at their timeouts, since the replies they wait for
/// died with the connection (an exclusive reply queue is deleted with it). An optional
/// refinement.
///
/// Requirement, for `t` of type `T&` (same completion-token and executor rules as
/// `transport`): `t.async_wait_disconnected(tok)` completes with `void(error_code)`.
///
/// Semantics: the wait completes with success when the connection the transport holds (or
/// is about to open) is lost, before the transport opens the next one; with `errc::closed`
/// when the transport is closed; with `operation_aborted` when cancelled through its token's
/// cancellation slot (`terminal`, `partial` or `total`). A wait started while the
/// transport is disconnected completes at the loss of the next connection.
///
/// Models: `in_memory::transport`; `amqp::transport`.
template <class T>
concept connection_watcher = transport<T> && requires(T& t) {
    t.async_wait_disconnected(detail::error_completion{});
};

} // namespace letterbox
