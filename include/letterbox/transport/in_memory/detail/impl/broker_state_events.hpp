// SPDX-License-Identifier: BSL-1.0
#pragma once

// Running the callbacks an operation queued, once the outermost operation ends.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL void broker_state::flush() {
    ++depth_;
    struct restore {
        broker_state& b;
        ~restore() { --b.depth_; }
    } r{*this};
    for (;;) {
        process_dead_letters();
        if (event_head_ == events_.size()) {
            events_.clear(); // keeps the capacity: no allocation per event in steady state
            event_head_ = 0;
            if (!ack_reviews_.empty())
                review_ack_timers(); // queues no event
            break;
        }
        auto e = std::move(events_[event_head_++]);
        std::visit([this](auto& ev) { deliver_event(ev); }, e);
    }
}

LETTERBOX_DECL void broker_state::deliver_event(ev_deliver& e) {
    if (e.ch->open && e.consumer->on_delivery)
        e.consumer->on_delivery(e.d);
}

LETTERBOX_DECL void broker_state::deliver_event(ev_confirm& e) {
    if (e.ch->open && e.ch->on_confirm)
        e.ch->on_confirm(e.seq, e.ack, false);
}

LETTERBOX_DECL void broker_state::deliver_event(ev_return& e) {
    if (e.ch->open && e.ch->on_return)
        e.ch->on_return(e.r);
}

LETTERBOX_DECL void broker_state::deliver_event(ev_cancel& e) {
    if (e.ch->open && e.consumer->on_cancel)
        e.consumer->on_cancel(e.consumer->tag);
}

LETTERBOX_DECL void broker_state::deliver_event(ev_channel_closed& e) {
    if (e.ch->on_close)
        e.ch->on_close(e.ch->reason);
}

LETTERBOX_DECL void broker_state::deliver_event(ev_connection_closed& e) {
    if (e.conn && e.conn->on_close)
        e.conn->on_close(e.conn->reason);
}

} // namespace letterbox::in_memory::detail
