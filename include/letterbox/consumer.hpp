// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/handler.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
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
    /// again at once. Only for faults known to be short; a poison message would loop.
    requeue,
};

/// How a `consumer` consumes and settles.
struct consumer_options {
    /// The queue, prefetch and tag to consume with.
    consume_options consume{};
    /// What to do when the handler fails (by exception or error code).
    failure_action on_failure = failure_action::dead_letter;
};

/// What a consumer has seen, for metrics and tests.
struct consumer_stats {
    std::uint64_t delivered = 0;
    /// Handled successfully and acknowledged.
    std::uint64_t acked = 0;
    /// Failed and settled according to `consumer_options::on_failure`.
    std::uint64_t failed = 0;

    friend bool operator==(const consumer_stats&, const consumer_stats&) = default;
};

/// Runs a handler for every delivery of a queue and settles each delivery from the outcome:
/// **ack only after the handler returned success**, so a crash before that (or a failed
/// handler) leaves the message to be delivered again. This is what makes the idempotent
/// middleware's "commit, then ack" order hold.
///
/// The handler runs on the transport's executor, one delivery at a time per consumer, so a
/// handler that blocks (a SQLite transaction) holds that executor for its duration.
/// Exceptions thrown by the handler count as failures and never escape; a `std::system_error`
/// (such as `letterbox::error`) keeps its code. A failure of the consumer's own store (an
/// `errc::store_*` code: database locked, disk full, ...) is not the message's fault: the
/// delivery is always requeued then, whatever `on_failure` says, so it is never dead-lettered
/// or dropped for it.
///
/// Retries, delayed redelivery and explicit dead-lettering with reasons are middleware around
/// the handler (issue 4); `on_failure` is only the last resort of this settling loop.
///
/// Thread safety: use one consumer from the transport's executor. The transport must outlive
/// it; in-flight handlers keep the consumer's state alive.
///
/// Example:
///
///     letterbox::consumer c(transport, idempotent_handler, {.consume = {.queue = "enrollments"}});
///     co_await c.async_start(asio::use_awaitable);
template <transport Transport, handler Handler>
class consumer {
public:
    consumer(Transport& transport, Handler h, consumer_options options = {})
        : state_(std::make_shared<state>(transport, std::move(h), std::move(options))) {}

    /// Starts consuming; completes with `void(std::error_code, std::string consumer_tag)`.
    template <class Token>
    auto async_start(Token&& token) {
        std::weak_ptr<state> weak = state_;
        return state_->transport->async_consume(
            state_->options.consume,
            [weak](delivery d) {
                if (auto s = weak.lock())
                    s->handle(std::move(d));
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
        return {state_->delivered.load(std::memory_order_relaxed),
                state_->acked.load(std::memory_order_relaxed),
                state_->failed.load(std::memory_order_relaxed)};
    }

private:
    struct state {
        state(Transport& t, Handler h, consumer_options o)
            : transport(&t)
            , handler(std::move(h))
            , options(std::move(o)) {}

        void handle(delivery d) {
            delivered.fetch_add(1, std::memory_order_relaxed);
            std::error_code ec;
            try {
                if constexpr (std::is_void_v<std::invoke_result_t<Handler&, const message&>>)
                    std::invoke(handler, std::as_const(d.msg));
                else
                    ec = std::invoke(handler, std::as_const(d.msg));
            } catch (const std::system_error& e) {
                ec = e.code() ? e.code() : make_error_code(errc::internal_error);
            } catch (...) {
                ec = errc::internal_error;
            }
            if (!ec) {
                acked.fetch_add(1, std::memory_order_relaxed);
                transport->async_ack(d, [](std::error_code) {});
                return;
            }
            failed.fetch_add(1, std::memory_order_relaxed);
            // The consumer's own database failed (locked, full, unreadable): not the message's
            // fault, so it must come back rather than be dead-lettered or dropped.
            if (options.on_failure == failure_action::requeue || is_store_error(ec))
                transport->async_nack(d, true, [](std::error_code) {});
            else
                transport->async_reject(d, false, [](std::error_code) {});
        }

        Transport* transport;
        Handler handler;
        consumer_options options;
        std::atomic<std::uint64_t> delivered{0};
        std::atomic<std::uint64_t> acked{0};
        std::atomic<std::uint64_t> failed{0};
    };

    std::shared_ptr<state> state_;
};

} // namespace letterbox
