// SPDX-License-Identifier: BSL-1.0
#pragma once

// Message TTL at the head of a queue, its timer, queue expiry (x-expires), and the consumer
// (delivery acknowledgement) timeout of a channel.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL void broker_state::expire_heads(queue_state& q, std::int64_t t) {
    while (auto* h = q.head()) {
        if (h->expires_at > t)
            break;
        dead_letter(q, q.pop_head(), dead_letter_reason::expired);
    }
}

LETTERBOX_DECL void broker_state::schedule(queue_state& q) {
    const auto* h = q.head();
    const auto deadline = h ? h->expires_at : no_expiry;
    if (deadline == q.timer_deadline || q.deleted)
        return;
    q.timer_deadline = deadline;
    if (deadline == no_expiry) {
        q.timer->cancel();
        return;
    }
    std::weak_ptr<broker_state> self = weak_from_this();
    std::weak_ptr<queue_state> wq = queues_.at(q.name);
    q.timer->wait_until(deadline, [self, wq] {
        auto b = self.lock();
        auto qs = wq.lock();
        if (!b || !qs || qs->deleted)
            return;
        scope s(*b);
        qs->timer_deadline = no_expiry;
        b->after_change(*qs, false);
    });
}

LETTERBOX_DECL void broker_state::touch(queue_state& q) {
    if (!q.args.expires || q.deleted)
        return;
    q.unused_until = now() + static_cast<std::int64_t>(q.args.expires->count()) * 1'000'000;
    if (!q.expiry_timer)
        q.expiry_timer = clock_->make_timer();
    std::weak_ptr<broker_state> self = weak_from_this();
    std::weak_ptr<queue_state> wq = q.self;
    q.expiry_timer->wait_until(q.unused_until, [self, wq] {
        auto b = self.lock();
        auto qs = wq.lock();
        if (!b || !qs || qs->deleted || !qs->consumers.empty() || b->now() < qs->unused_until)
            return;
        scope s(*b);
        b->delete_queue(*qs, drop_kind::queue_expired);
    });
}

LETTERBOX_DECL void broker_state::review_acks_later(channel_state& ch) {
    if (ch.ack_review)
        return;
    ch.ack_review = true;
    ack_reviews_.push_back(ch.self);
}

LETTERBOX_DECL void broker_state::review_ack_timers() {
    lazy_now t{*this};
    // Arming a timer never lists a channel, so the vector does not grow while it is walked.
    for (auto& w : ack_reviews_) {
        auto ch = w.lock();
        if (!ch)
            continue;
        ch->ack_review = false;
        if (!ch->open)
            continue;
        // What this operation handed out is at the back, unstamped; what is already
        // settled needs no time.
        for (auto it = ch->unacked.rbegin();
             it != ch->unacked.rend() && it->delivered_at == unacked_entry::unstamped; ++it)
            it->delivered_at = it->settled ? 0 : t();
        if (ch->live_unacked == 0) {
            if (ch->ack_check_at != no_expiry) {
                ch->ack_check_at = no_expiry;
                ch->ack_timer->cancel();
            }
        } else if (ch->ack_check_at == no_expiry) {
            arm_ack_timer(*ch);
        }
    }
    ack_reviews_.clear();
}

LETTERBOX_DECL void broker_state::arm_ack_timer(channel_state& ch) {
    auto oldest = std::find_if(ch.unacked.begin(), ch.unacked.end(),
                               [](const unacked_entry& e) { return !e.settled; });
    if (oldest == ch.unacked.end() || oldest->delivered_at == unacked_entry::unstamped)
        return;
    const std::int64_t deadline = oldest->delivered_at + ch.consumer_timeout_ms * 1'000'000;
    // The ticks come every tick_ns from the channel's opening; RabbitMQ closes at the first
    // one at which the delivery is strictly older than the timeout.
    const std::int64_t at =
        ch.opened_at + ((deadline - ch.opened_at) / ch.tick_ns + 1) * ch.tick_ns;
    if (!ch.ack_timer)
        ch.ack_timer = clock_->make_timer();
    ch.ack_check_at = at;
    std::weak_ptr<broker_state> self = weak_from_this();
    std::weak_ptr<channel_state> wch = ch.self;
    ch.ack_timer->wait_until(at, [self, wch, at] {
        auto b = self.lock();
        auto c = wch.lock();
        if (!b || !c || c->ack_check_at != at)
            return;
        scope s(*b);
        b->ack_tick(*c, at);
    });
}

LETTERBOX_DECL void broker_state::ack_tick(channel_state& ch, std::int64_t at) {
    ch.ack_check_at = no_expiry;
    if (!ch.open)
        return;
    auto oldest = std::find_if(ch.unacked.begin(), ch.unacked.end(),
                               [](const unacked_entry& e) { return !e.settled; });
    if (oldest == ch.unacked.end())
        return;
    if (oldest->delivered_at != unacked_entry::unstamped &&
        oldest->delivered_at + ch.consumer_timeout_ms * 1'000'000 < at) {
        channel_error(ch, errc::precondition_failed,
                      letterbox::detail::consumer_timeout_text(ch.number, ch.consumer_timeout_ms));
        return;
    }
    arm_ack_timer(ch);
}

} // namespace letterbox::in_memory::detail
