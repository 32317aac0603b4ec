// SPDX-License-Identifier: BSL-1.0
#pragma once

// Connections and channels: opening them, and closing them with everything they hold.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL std::shared_ptr<connection_state> broker_state::open_connection(std::string name) {
    auto c = std::make_shared<connection_state>();
    c->name = std::move(name);
    if (down_) {
        ++refused_connections_;
        c->open = false;
        c->reason = {make_error_code(errc::connection_closed),
                     "connection refused: the broker is unreachable (fault injection)"};
        return c;
    }
    c->id = ++last_id_;
    connections_.push_back(c);
    return c;
}

LETTERBOX_DECL std::shared_ptr<channel_state> broker_state::open_channel(connection_state& c) {
    auto ch = std::make_shared<channel_state>();
    ch->id = ++last_id_;
    ch->self = ch;
    ch->connection = &c;
    if (!c.open) {
        ch->open = false;
        ch->connection_closed = true;
        ch->reason = c.reason;
    } else {
        // Numbered as amqp::transport's connection numbers its channels: the next number no
        // open channel of the connection has, after the one handed out last, wrapping at
        // RabbitMQ 3.10's channel_max (2047). A number is not reused at once.
        constexpr std::uint32_t channel_max = 2047;
        std::vector<std::uint16_t> used;
        for (const auto& other : c.channels)
            if (other->open)
                used.push_back(other->number);
        for (std::uint32_t k = 1; k <= channel_max; ++k) {
            const auto n = static_cast<std::uint16_t>((c.last_number + k - 1) % channel_max + 1);
            if (std::find(used.begin(), used.end(), n) == used.end()) {
                ch->number = n;
                break;
            }
        }
        c.last_number = ch->number;
        // The consumer timeout is read at channel open, as RabbitMQ reads it (§2.18).
        if (const auto& timeout = profile_.consumer_timeout) {
            ch->consumer_timeout_ms = std::max<std::int64_t>(timeout->count(), 1);
            ch->tick_ns =
                std::max<std::int64_t>(profile_.channel_tick_interval.count(), 1) * 1'000'000;
            ch->opened_at = now();
        }
    }
    c.channels.push_back(ch);
    return ch;
}

LETTERBOX_DECL void broker_state::close_channel(channel_state& ch, close_reason why) {
    if (!ch.open)
        return;
    ch.open = false;
    wind_down(ch, std::move(why));
}

LETTERBOX_DECL void broker_state::wind_down(channel_state& ch, close_reason why) {
    scope s(*this);
    ch.reason = std::move(why);
    ch.ack_check_at = no_expiry;
    ch.ack_timer.reset(); // a closed channel's handle may outlive the broker and its clock
    requeue_all(ch, return_kind::channel_closed);
    forget_reply_consumer(ch);
    for (auto& [tag, c] : ch.consumers)
        remove_consumer(*c);
    ch.consumers.clear();
    events_.push_back(ev_channel_closed{shared_channel(ch)});
}

LETTERBOX_DECL void broker_state::close_connection(connection_state& c, close_reason why) {
    if (!c.open)
        return;
    scope s(*this);
    c.open = false;
    c.reason = why;
    // Every channel stops taking deliveries before any of them returns its messages, so a
    // message one channel returns never goes to another that is closing with it.
    std::vector<channel_state*> closing;
    for (auto& ch : c.channels) {
        ch->connection_closed = true;
        if (ch->open) {
            ch->open = false;
            closing.push_back(ch.get());
        }
    }
    for (auto* ch : closing)
        wind_down(*ch, why);
    std::vector<std::string> owned;
    for (auto& [name, q] : queues_)
        if (q->exclusive && q->owner == c.id)
            owned.push_back(name);
    for (auto& name : owned)
        delete_queue(*queues_.at(name), drop_kind::queue_deleted);
    std::shared_ptr<connection_state> keep;
    for (auto& p : connections_)
        if (p.get() == &c)
            keep = p;
    std::erase_if(connections_, [&](const auto& p) { return p.get() == &c; });
    events_.push_back(ev_connection_closed{std::move(keep)});
}

} // namespace letterbox::in_memory::detail
