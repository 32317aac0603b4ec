// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/caused_by.hpp>
#include <letterbox/concepts/detail/check_transport.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/error.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/message.hpp>

#include <atomic>
#include <concepts>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// What a responder has done so far.
struct responder_stats {
    std::uint64_t replied = 0; ///< replies the broker confirmed and routed
    /// Replies the broker returned as unroutable: their requester's reply queue was gone (it
    /// stopped, or its connection was lost). Nobody waits for them, so they count as done.
    std::uint64_t unroutable = 0;
    std::uint64_t refused = 0; ///< requests without `reply_to` (`errc::missing_reply_to`)
};

/// The replying side of request/reply: an asynchronous handler (`async_handler`) made of a
/// function from a request to its reply. For each request it calls `reply(request)`, then
/// publishes the result to the request's `reply_to` address (the default exchange, with
/// `reply_to` as the routing key) with the request's `correlation_id` (its message id, when it
/// has none), and completes when the broker confirmed the reply. It composes with the
/// middleware as any handler does: the consumer, retries and dead-lettering see a responder
/// that failed when `reply` threw or the reply's publish failed.
///
///     auto quote = letterbox::responder(transport, [](const letterbox::message& request) {
///         return letterbox::message{.body = price_of(request.body)};
///     });
///     letterbox::consumer worker(transport, quote, clock, {.consume = {.queue = "quotes"}});
///
/// - A request without `reply_to` fails with `errc::missing_reply_to`, a permanent failure
///   that the dead-letter layer records with the reason `missing-reply-to`; `reply` is not
///   called.
/// - A reply that the broker returns as unroutable (`errc::no_route`: the requester's reply
///   queue is gone) is not a failure: nobody waits for it, and handling the request again
///   would repeat its effects. It is counted in `responder_stats::unroutable`.
/// - Replies are transient (`persistent = false`): they go to a non-durable reply queue.
/// - A reply is `caused_by` its request: it joins the request's trace and conversation
///   (docs/tracing.md). A reply without a message id is given one.
///
/// `Reply` is called as `message(const message& request)`; what it sets in the reply's
/// `exchange`, `routing_key`, `correlation_id` and `reply_to` is replaced. A duplicate
/// request (at-least-once delivery) is answered again: put the effect, not the reply, behind
/// the inbox (docs/request-reply.md).
template <class Transport, class Reply>
    requires std::invocable<Reply&, const message&> &&
        std::convertible_to<std::invoke_result_t<Reply&, const message&>, message>
class responder {
    static_assert(detail::check_transport<Transport>());

public:
    responder(Transport& transport, Reply reply)
        : transport_(&transport)
        , reply_(std::move(reply)) {}

    /// Replies to `request`; completes with `void(error_code)`.
    template <class Token>
    auto operator()(const message& request, Token&& token) {
        // The reply is made here, in the caller: an exception from `reply` reaches the
        // middleware that called the handler, as a handler's would.
        std::optional<message> out;
        if (request.properties.reply_to && !request.properties.reply_to->empty())
            out = make_reply(request);
        return detail::async_start<void(error_code)>(
            std::forward<Token>(token), transport_->get_executor(),
            [t = transport_, c = counts_,
             out = std::move(out)](detail::async_op<void(error_code)> op) mutable {
                if (!out) {
                    c->refused.fetch_add(1, std::memory_order_relaxed);
                    return op(make_error_code(errc::missing_reply_to));
                }
                t->async_publish(std::move(*out), [c, op](error_code ec) {
                    if (ec == errc::no_route) {
                        c->unroutable.fetch_add(1, std::memory_order_relaxed);
                        return op(error_code{});
                    }
                    if (!ec)
                        c->replied.fetch_add(1, std::memory_order_relaxed);
                    op(ec);
                });
            });
    }

    /// What the responder has done so far (shared by its copies).
    responder_stats stats() const noexcept {
        auto get = [](const std::atomic<std::uint64_t>& a) {
            return a.load(std::memory_order_relaxed);
        };
        return {get(counts_->replied), get(counts_->unroutable), get(counts_->refused)};
    }

private:
    struct counters {
        std::atomic<std::uint64_t> replied{0}, unroutable{0}, refused{0};
        std::mutex ids_mutex;
        message_id_generator ids;
    };

    message make_reply(const message& request) {
        message r = reply_(request);
        r.exchange.clear();
        r.routing_key = *request.properties.reply_to;
        r.properties.reply_to.reset();
        r.properties.correlation_id = request.properties.correlation_id
                                          ? *request.properties.correlation_id
                                          : letterbox::to_string(request.id);
        r.properties.persistent = false;
        if (r.id.is_nil()) {
            std::lock_guard lock(counts_->ids_mutex);
            r.id = counts_->ids();
        }
        caused_by(request, r);
        return r;
    }

    Transport* transport_;
    Reply reply_;
    std::shared_ptr<counters> counts_ = std::make_shared<counters>();
};

} // namespace letterbox
