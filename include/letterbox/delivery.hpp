// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// One message handed to a consumer (`basic.deliver`) or fetched (`basic.get-ok`).
///
/// `msg.exchange` and `msg.routing_key` are the ones the message was last published with
/// (for a dead letter: the dead-letter exchange and key). Settle it with the transport that
/// delivered it: `async_ack`, `async_nack` or `async_reject`.
struct delivery {
    message msg;
    /// Channel-scoped tag: starts at 1 and grows by one per delivery on that channel.
    std::uint64_t delivery_tag = 0;
    /// True when the message was delivered before (requeued, recovered, channel lost).
    bool redelivered = false;
    /// The consumer's tag; empty for `basic.get`.
    std::string consumer_tag{};
    /// The queue it came from.
    std::string queue{};
    /// Identifies the channel that owns `delivery_tag` (opaque to users).
    std::uint64_t channel = 0;
    /// For `basic.get`: how many messages remained ready in the queue.
    std::optional<std::uint32_t> message_count{};
};

} // namespace letterbox
