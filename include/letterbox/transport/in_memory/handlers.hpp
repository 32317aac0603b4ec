// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/transport/in_memory/basic_delivery.hpp>
#include <letterbox/transport/in_memory/close_reason.hpp>
#include <letterbox/transport/in_memory/returned_message.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// Called for each `basic.deliver` to a consumer.
using delivery_callback = std::function<void(const basic_delivery&)>;
/// Compatibility name of `delivery_callback`, whose name clashed with the
/// `letterbox::delivery_handler` concept (a handler of letterbox deliveries, not of the
/// broker's `basic.deliver`).
using delivery_handler = delivery_callback;
/// Called when the broker cancels a consumer (its queue was deleted): `basic.cancel`.
using cancel_handler = std::function<void(const std::string& consumer_tag)>;
/// Called for each publisher confirm: `basic.ack` (`ack == true`) or `basic.nack`.
using confirm_handler = std::function<void(std::uint64_t seq, bool ack, bool multiple)>;
/// Called for each `basic.return`.
using return_handler = std::function<void(const returned_message&)>;
/// Called when a channel or connection closes, for any reason.
using close_handler = std::function<void(const close_reason&)>;

/// Options of `channel::basic_consume`; the prefetch comes from `channel::basic_qos`.
struct basic_consume_options {
    std::string consumer_tag{};
    bool no_ack = false;
    bool exclusive = false;
    field_table arguments{};
};

/// The reply to `queue.declare`.
struct queue_declare_ok {
    std::string name{};
    std::size_t message_count = 0;
    std::size_t consumer_count = 0;
};

} // namespace letterbox::in_memory
