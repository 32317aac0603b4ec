// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// RabbitMQ's direct reply-to pseudo-queue. A requester consumes it without acknowledgements
/// and names it as a request's `reply_to`, on the same channel; the broker then gives the
/// request a reply address of its own, `amq.rabbitmq.reply-to.<key>`, and delivers what is
/// published to that address (on the default exchange) straight to the requesting channel. No
/// queue is declared, and nothing is stored: a reply to a channel that is gone is dropped.
/// `in_memory::transport` and `amqp::transport` consume it on their publishing channel
/// (docs/request-reply.md).
inline constexpr std::string_view direct_reply_to = "amq.rabbitmq.reply-to";

/// What every reply address the broker hands out starts with.
inline constexpr std::string_view direct_reply_to_prefix = "amq.rabbitmq.reply-to.";

/// Whether a publish to `exchange` with `routing_key` is a reply to a direct reply-to address.
/// RabbitMQ delivers such a publish and also returns it when it is mandatory (it reaches no
/// queue), so the transports publish it without the flag.
constexpr bool is_direct_reply(std::string_view exchange, std::string_view routing_key) noexcept {
    return exchange.empty() && routing_key.starts_with(direct_reply_to_prefix);
}

} // namespace letterbox::topology
