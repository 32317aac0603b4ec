// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// How to consume from a queue (`basic.qos` + `basic.consume`).
struct consume_options {
    /// The queue to consume from.
    std::string queue{};
    /// At most this many unacknowledged deliveries per consumer; 0 means no limit (AMQP).
    std::uint16_t prefetch = 32;
    /// Deliveries are settled on delivery (`no-ack`): at-most-once. Off by default.
    bool no_ack = false;
    bool exclusive = false;
    /// Empty asks the transport to generate a tag.
    std::string consumer_tag{};
    field_table arguments{};
};

} // namespace letterbox
