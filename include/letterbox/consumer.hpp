// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/detail/check_clock.hpp>
#include <letterbox/concepts/detail/check_handler.hpp>
#include <letterbox/concepts/detail/check_transport.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/consumer_event.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/group_commit_options.hpp>
#include <letterbox/group_options.hpp>
#include <letterbox/steady_clock.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

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
    /// Where the handler runs. Empty (the default): on the transport's executor, one delivery
    /// at a time. Set it to a thread pool's executor (`asio::thread_pool::get_executor()`) for
    /// handlers that block, such as an SQLite transaction or a call to a slow service: each
    /// delivery's pipeline then runs there, up to `consume.prefetch` of them at once, and the
    /// transport's executor stays free for heartbeats, confirms, the relay and the other
    /// consumers. What the handler decides is carried out back on the transport's executor.
    /// The handler, and `on_event` for the `handled` and `retried` events it reports from
    /// there, must then be safe to call from several threads at once (the middleware layers,
    /// the idempotent handler and the SQLite stores are).
    boost::asio::any_io_executor handler_executor{};
    /// Off by default. With `max_messages` above 1, the deliveries are handled in batches that
    /// share one unit of work, committed once and acknowledged after the commit (group commit,
    /// docs/group-commit.md): the idempotent handler stages each message in a savepoint of it.
    /// Needs a synchronous handler (an asynchronous one would hold the transaction open across
    /// its waits: the constructor throws `errc::precondition_failed`). With a
    /// `handler_executor`, each batch runs there in one go.
    group_commit_options group_commit{};
    /// Off by default. With a key function, message groups (docs/message-groups.md): the
    /// deliveries of one group are handled one at a time, in the order they arrived; those of
    /// different groups in parallel, up to `groups.concurrency`.
    group_options groups{};
};

/// What a consumer has seen, for metrics and tests.
struct consumer_stats {
    std::uint64_t delivered = 0;
    /// Handled successfully and acknowledged.
    std::uint64_t acked = 0;
    /// Failed with no layer deciding, and settled according to `consumer_options::on_failure`
    /// (or, for a store error, handled again after `store_retry_initial`).
    std::uint64_t failed = 0;
    /// Runs again after an in-process retry: at once, inside the retry layer
    /// (`middleware::handling::on_rerun`), or after a delay (`disposition::retry_in`).
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
/// `middleware::disposition` the consumer carries out; or the asynchronous form of either
/// (`async_handler`: a coroutine, or a function that takes a completion token;
/// `async_delivery_handler`: the layers around one), which the consumer starts with `co_spawn`
/// and settles when it completes, holding no thread while it waits (docs/async-handlers.md):
/// - `ack`; `fail` (the last resort below); `reject` and `requeue` as they say;
/// - `retry_in`: waits the delay on `Clock` (holding the delivery), then runs again;
/// - `forward`: publishes the copy (mandatory, confirmed) and acks the original only after
///   the confirm; if that publish fails, the original is requeued. A crash in between
///   leaves both (a duplicate for the inbox to absorb), never neither.
///
/// The handler runs on the transport's executor, so a synchronous handler that blocks (a
/// SQLite transaction) holds that executor for its duration, one delivery at a time, unless
/// `consumer_options::handler_executor` names another executor (a thread pool) to run it on.
/// An asynchronous handler runs there too, and up to the prefetch of deliveries are in progress
/// at once while their handlers wait.
/// Exceptions thrown by the handler count as failures and never escape; a `std::system_error`
/// (such as `letterbox::error`) keeps its code. A failure of the consumer's own store (an
/// `errc::store_*` code: database locked, disk full, ...) is not the message's fault: the
/// delivery is held and handled again after a back-off (`store_retry_initial`, doubling up to
/// `store_retry_max`), whatever `on_failure` says, so it is never dead-lettered or dropped for
/// it, and a locked database never turns into a hot requeue loop. If the process dies
/// meanwhile, the broker redelivers the held message.
///
/// With `consumer_options::groups`, a delivery waits until the one before it in its group is
/// settled, so the deliveries of a group are handled in order while groups run side by side
/// (docs/message-groups.md).
///
/// With `consumer_options::group_commit`, deliveries are handled in batches that commit once:
/// the acks of a batch wait for its commit, and a failed commit hands every delivery of the
/// batch that succeeded back to the store back-off above (docs/group-commit.md).
///
/// Thread safety: use one consumer from the transport's executor. The transport and the
/// clock must outlive it and its in-flight handlers (a suspended coroutine handler keeps the
/// consumer's state alive): shut it down (`async_shutdown`) before destroying them.
///
/// Example:
///
///     letterbox::consumer c(transport, pipeline, clock, {.consume = {.queue = "enrollments"}});
///     co_await c.async_start(asio::use_awaitable);
template <class Transport, class Handler, class Clock = steady_clock>
class consumer {
    // Each requirement on its own, with a message that names what is missing
    // (docs/design/requirement-checks.md).
    static_assert(detail::check_transport<Transport>());
    static_assert(detail::check_handler<Handler>());
    static_assert(detail::check_clock<Clock>());

public:
    /// A consumer whose in-process retry delays run on the system's steady clock. Throws
    /// `letterbox::error(errc::precondition_failed)` for group commit with an asynchronous
    /// handler, or with a `max_delay` that is not positive.
    consumer(Transport& transport, Handler h,
             consumer_options options = {}) requires std::same_as<Clock, steady_clock>
        : state_(std::make_shared<state>(transport, std::move(h), nullptr, std::move(options))) {}

    consumer(Transport& transport, Handler h, Clock& clock, consumer_options options = {})
        : state_(std::make_shared<state>(transport, std::move(h), &clock, std::move(options))) {}

    /// Starts consuming; completes with `void(error_code, std::string consumer_tag)`.
    template <class Token>
    auto async_start(Token&& token);

    /// Cancels the consumer with `tag` (from `async_start`); deliveries already received are
    /// still handled and settled. Completes with `void(error_code)`.
    template <class Token>
    auto async_stop(const std::string& tag, Token&& token);

    /// Waits until the consumer is idle: no delivery in flight (handled, waiting for a retry,
    /// or forwarded and waiting for its confirm) and, as far as the transport can tell
    /// (`async_queue_depth`), no ready message left in the queue. Messages waiting in retry
    /// queues are not counted: they come back when their delay ends. Completes with
    /// `void(error_code)`: success, the transport's error when it cannot tell the queue's
    /// depth, or `operation_aborted` when cancelled through the token's cancellation slot
    /// (`terminal`, `partial` or `total`: waiting leaves no trace). A consumer that is not
    /// consuming its queue is idle only once the queue is empty.
    ///
    ///     co_await worker.async_wait_idle(asio::use_awaitable);
    template <class Token>
    auto async_wait_idle(Token&& token);

    /// Stops gracefully: cancels the consumer with `tag` (no new delivery arrives), then waits
    /// until every delivery already received is settled (acked, rejected, requeued or
    /// forwarded). Completes with `void(error_code)`: success, the error of the cancel, or
    /// `operation_aborted` when cancelled through the token's slot (any type; the consumer
    /// stays cancelled and its deliveries are still settled).
    template <class Token>
    auto async_shutdown(const std::string& tag, Token&& token);

    /// What the consumer has seen so far.
    consumer_stats stats() const noexcept;

    /// The handler (e.g. to read its statistics).
    const Handler& handler() const noexcept { return state_->handler; }

private:
    using disposition = middleware::disposition;

    struct counters;
    struct state;

    std::shared_ptr<state> state_;
};

template <class Transport, class Handler, class Clock>
consumer(Transport&, Handler, Clock&, consumer_options = {}) -> consumer<Transport, Handler, Clock>;

} // namespace letterbox

#include <letterbox/impl/consumer.hpp>
