// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/message.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// A delivery as the in-memory broker hands it out (`basic.deliver` / `basic.get-ok`). The
/// message is shared, not copied: copies routed to several queues share one body.
struct basic_delivery {
    std::shared_ptr<const message> msg{};
    std::uint64_t delivery_tag = 0;
    bool redelivered = false;
    std::string consumer_tag{};
    std::string queue{};
    std::uint64_t channel = 0;
    std::optional<std::uint32_t> message_count{};

    /// The transport-neutral form (copies the message).
    letterbox::delivery to_delivery() const {
        return letterbox::delivery{*msg,  delivery_tag, redelivered,  consumer_tag,
                                   queue, channel,      message_count};
    }
};

} // namespace letterbox::in_memory
