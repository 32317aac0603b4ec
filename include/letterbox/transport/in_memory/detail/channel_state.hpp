// SPDX-License-Identifier: BSL-1.0
#pragma once

// The client side of the in-memory broker: connections, their channels, the deliveries a
// channel holds unacknowledged and the consumers it runs. Private to the in-memory broker
// (broker_state.hpp).

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/close_reason.hpp>
#include <letterbox/transport/in_memory/detail/clock_adapter.hpp>
#include <letterbox/transport/in_memory/detail/envelope.hpp>
#include <letterbox/transport/in_memory/detail/queue_state.hpp>
#include <letterbox/transport/in_memory/handlers.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

struct channel_state;
struct connection_state;

struct consumer_state {
    std::string tag;
    std::weak_ptr<queue_state> queue;
    channel_state* channel = nullptr;
    std::uint32_t prefetch = 0;
    bool no_ack = false;
    bool exclusive = false;
    bool active = true;
    std::uint32_t outstanding = 0;
    delivery_callback on_delivery;
    cancel_handler on_cancel;
};

struct unacked_entry {
    std::uint64_t tag = 0;
    std::shared_ptr<queue_state> queue;
    queued m;
    std::shared_ptr<consumer_state> consumer; // null for basic.get
    // When it was handed out, on the broker's clock; `unstamped` until the outermost broker
    // operation that handed it out ends (broker_state::review_ack_timers).
    std::int64_t delivered_at = unstamped;
    bool settled = false;

    static constexpr std::int64_t unstamped = -1;
};

struct channel_state {
    std::uint64_t id = 0;
    // The channel number on the wire, as amqp::transport's connection numbers its channels (the
    // next free one after the last handed out). It appears in the consumer timeout's reply text.
    std::uint16_t number = 0;
    std::weak_ptr<channel_state> self;
    // Valid while the channel is open. A closed channel's handle may outlive its connection (a
    // hard error closes the connection under it), so a closed channel reads only its own
    // fields, `connection_closed` among them.
    connection_state* connection = nullptr;
    bool open = true;
    bool connection_closed = false; // its connection closed
    close_reason reason;
    std::uint64_t next_tag = 1;
    std::deque<unacked_entry> unacked; // sorted by tag; settled entries leave from the front
    std::size_t live_unacked = 0;
    bool confirm = false;
    std::uint64_t next_seq = 1;
    std::uint32_t consumer_prefetch = 0;
    std::uint32_t global_prefetch = 0;
    std::uint32_t global_outstanding = 0;
    std::uint64_t next_consumer_tag = 1;
    std::map<std::string, std::shared_ptr<consumer_state>, std::less<>> consumers;
    // Direct reply-to: the key of this channel's reply address and its reply consumer's tag
    // (both empty while it has none).
    std::string reply_key;
    std::string reply_tag;
    // The consumer timeout (§2.18): the value the channel opened with (0: none), its tick grid
    // (every `tick_ns` from `opened_at`), and one timer, armed for the tick that may close the
    // channel while it holds unacknowledged deliveries.
    std::int64_t consumer_timeout_ms = 0;
    std::int64_t tick_ns = 0;
    std::int64_t opened_at = 0;
    std::unique_ptr<timer_adapter> ack_timer;
    std::int64_t ack_check_at = no_expiry; // the armed tick, or no_expiry
    bool ack_review = false;               // listed in broker_state::ack_reviews_
    confirm_handler on_confirm;
    return_handler on_return;
    close_handler on_close;
};

struct connection_state {
    std::uint64_t id = 0;
    std::string name;
    bool open = true;
    close_reason reason;
    std::vector<std::shared_ptr<channel_state>> channels;
    std::uint16_t last_number = 0; // the channel number handed out last
    close_handler on_close;
};

} // namespace letterbox::in_memory::detail
