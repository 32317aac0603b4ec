// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/detail/check_clock.hpp>
#include <letterbox/concepts/detail/check_transport.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/message.hpp>
#include <letterbox/steady_clock.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Where a `request_client`'s replies come to.
enum class reply_route : std::uint8_t {
    /// RabbitMQ's direct reply-to when the transport takes it, else a reply queue: the
    /// transports take one direct reply-to consumer each, so a second client on the same
    /// transport falls back to a queue.
    automatic,
    /// Only direct reply-to (`topology::direct_reply_to`): no queue, nothing stored, the
    /// fastest; `async_start` fails when the transport or the broker refuses it.
    direct_reply_to,
    /// An exclusive, auto-delete reply queue (`request_client_options::reply_queue`).
    reply_queue,
};

/// How a `request_client` receives its replies.
struct request_client_options {
    reply_route route = reply_route::automatic;
    /// The reply queue, when one is used. `async_start` declares it non-durable, exclusive to
    /// the transport's connection and auto-deleted when its consumer goes. Empty:
    /// `letterbox.reply.` and a fresh id, so that two clients never share one.
    std::string reply_queue{};
};

/// What a request client has seen so far. Every request ends in exactly one of `replied`,
/// `timed_out`, `cancelled`, `failed` (its publish failed or the connection was lost), and a
/// reply that finds no waiting request is counted in `late_replies` or `unknown_replies` and
/// dropped.
struct request_client_stats {
    std::uint64_t requests = 0;  ///< requests started
    std::uint64_t replied = 0;   ///< requests that completed with their reply
    std::uint64_t timed_out = 0; ///< requests whose timeout came first (`errc::timed_out`)
    std::uint64_t cancelled = 0; ///< requests cancelled through their cancellation slot
    /// Requests refused at their start (before `async_start`, after `async_stop`, while the
    /// reply queue is set up again after a lost connection), whose publish failed, or whose
    /// connection was lost while they waited.
    std::uint64_t failed = 0;
    std::uint64_t late_replies = 0; ///< replies to a request of this client that had ended
    /// Replies whose correlation id this client never issued (or that have none).
    std::uint64_t unknown_replies = 0;
};

/// The requesting side of request/reply: publishes a request with a `correlation_id` and a
/// `reply_to` address, and completes with the reply that carries the same correlation id, or
/// with `errc::timed_out` when the clock reaches the request's timeout. It is what
/// MassTransit's request client and Spring's `sendAndReceive` are.
///
///     letterbox::request_client quotes(transport, clock);
///     co_await quotes.async_start(asio::use_awaitable);
///     letterbox::message ask{.routing_key = "quotes", .body = R"({"sku":"A-1"})"};
///     letterbox::message price = co_await quotes.async_request(ask, 2s, asio::use_awaitable);
///
/// Guarantees (docs/request-reply.md):
/// - a request completes exactly once: with its reply, `errc::timed_out`, `operation_aborted`
///   (cancelled through its token's cancellation slot: `terminal`, `partial` or `total`), the
///   publish's error, or `errc::connection_closed` when the transport reports that its
///   connection was lost while the request waited (a `connection_watcher`); no request is left
///   waiting beyond its timeout;
/// - a reply is handed only to the request whose correlation id it carries; one that comes
///   after its request ended (late, or a duplicate) is dropped and counted in
///   `late_replies`; one with an id this client never issued is dropped and counted in
///   `unknown_replies`.
///
/// Correlation ids are the client's own: its id, a colon and a counter. The request's own
/// `correlation_id` and `reply_to` are replaced; its message id, headers and body are kept.
///
/// Thread safety: use the client from the transport's executor. The transport and the clock
/// must outlive it and its pending requests; `async_stop` before destroying them.
template <class Transport, class Clock = steady_clock>
class request_client {
    static_assert(detail::check_transport<Transport>());
    static_assert(detail::check_clock<Clock>());

public:
    using duration = typename Clock::duration;

    /// A client whose timeouts run on the system's steady clock.
    explicit request_client(Transport& transport, request_client_options options = {}) requires
        std::same_as<Clock, steady_clock>;

    request_client(Transport& transport, Clock& clock, request_client_options options = {});

    /// Consumes replies (declaring the reply queue first, when one is used). Completes with
    /// `void(error_code)`.
    template <class Token>
    auto async_start(Token&& token);

    /// Publishes `request` (to its `exchange` and `routing_key`) with this client's reply
    /// address and a fresh correlation id, then waits for the reply. Completes with
    /// `void(error_code, message)`: the reply, or one of the errors above (and
    /// `errc::precondition_failed` before `async_start` completed).
    template <class Token>
    auto async_request(message request, duration timeout, Token&& token);

    /// Stops consuming replies and ends every pending request with `errc::closed`. Completes
    /// with `void(error_code)`.
    template <class Token>
    auto async_stop(Token&& token);

    /// The `reply_to` of the requests: `topology::direct_reply_to` (which the broker replaces
    /// with an address of the publishing channel) or the reply queue's name. Empty before
    /// `async_start` completed.
    const std::string& reply_to() const noexcept;

    /// What the client has seen so far.
    request_client_stats stats() const noexcept;

private:
    struct state;
    std::shared_ptr<state> state_;
};

} // namespace letterbox

#include <letterbox/impl/request_client.hpp>
