// SPDX-License-Identifier: BSL-1.0
#pragma once

// The callbacks the in-memory broker owes its clients, queued until the operation that caused
// them ends. Private to the in-memory broker (broker_state.hpp).

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/basic_delivery.hpp>
#include <letterbox/transport/in_memory/detail/channel_state.hpp>
#include <letterbox/transport/in_memory/returned_message.hpp>

#include <cstdint>
#include <memory>
#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

// Callbacks never run while the broker is mid-operation: they are queued as events and run
// when the outermost operation ends, so a handler may call back into the broker safely.
struct ev_deliver {
    // Raw: a channel_state lives as long as its connection_state, which outlives every event
    // queued before its own ev_connection_closed (events run in FIFO order).
    channel_state* ch;
    std::shared_ptr<consumer_state> consumer;
    basic_delivery d;
};
struct ev_confirm {
    std::shared_ptr<channel_state> ch;
    std::uint64_t seq;
    bool ack;
};
struct ev_return {
    std::shared_ptr<channel_state> ch;
    returned_message r;
};
struct ev_cancel {
    std::shared_ptr<channel_state> ch;
    std::shared_ptr<consumer_state> consumer;
};
struct ev_channel_closed {
    std::shared_ptr<channel_state> ch;
};
struct ev_connection_closed {
    std::shared_ptr<connection_state> conn;
};
using event = std::variant<ev_deliver, ev_confirm, ev_return, ev_cancel, ev_channel_closed,
                           ev_connection_closed>;

} // namespace letterbox::in_memory::detail
