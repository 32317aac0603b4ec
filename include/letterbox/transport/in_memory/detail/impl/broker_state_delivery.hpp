// SPDX-License-Identifier: BSL-1.0
#pragma once

// Handing ready messages to consumers within their prefetch, and releasing them.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL void broker_state::after_change(queue_state& q, bool fresh_publish) {
    if (q.deleted)
        return;
    lazy_now t{*this};
    dispatch(q, fresh_publish, t);
    if (const auto* h = q.head(); h && h->expires_at != no_expiry)
        expire_heads(q, t());
    schedule(q);
}

LETTERBOX_DECL void broker_state::dispatch_channel(channel_state& ch) {
    auto& qs = channel_queues_scratch_; // never re-entered: after_change runs no callback
    qs.clear();
    for (auto& [tag, c] : ch.consumers)
        if (auto q = c->queue.lock())
            qs.push_back(std::move(q));
    for (auto& q : qs)
        after_change(*q, false);
    qs.clear();
}

LETTERBOX_DECL bool broker_state::has_capacity(const consumer_state& c) {
    const auto& ch = *c.channel;
    if (!c.active || !ch.open)
        return false;
    if (c.no_ack)
        return true;
    return (c.prefetch == 0 || c.outstanding < c.prefetch) &&
           (ch.global_prefetch == 0 || ch.global_outstanding < ch.global_prefetch);
}

LETTERBOX_DECL void broker_state::dispatch(queue_state& q, bool fresh_publish, lazy_now& t) {
    std::shared_ptr<queue_state> self; // looked up on the first hand-out only
    while (q.ready_count() > 0 && !q.consumers.empty()) {
        if (q.head()->expires_at != no_expiry)
            expire_heads(q, fresh_publish ? t() - 1 : t());
        if (q.ready_count() == 0)
            break;
        const auto n = q.consumers.size();
        std::shared_ptr<consumer_state> chosen;
        if (q.single_active_consumer) {
            // Only the active consumer, the oldest one, receives; the others wait for it to go.
            if (!has_capacity(*q.consumers.front()))
                break;
            chosen = q.consumers.front();
        }
        for (std::size_t i = 0; !chosen && i < n; ++i) {
            auto& c = q.consumers[(q.next_consumer + i) % n];
            if (has_capacity(*c)) {
                chosen = c;
                q.next_consumer = (q.next_consumer + i + 1) % n;
                break;
            }
        }
        if (!chosen)
            break;
        auto& ch = *chosen->channel;
        const bool no_ack = chosen->no_ack;
        if (!self)
            self = q.self.lock();
        auto d = hand_out(ch, self, chosen, q.pop_head(), no_ack, false);
        events_.push_back(ev_deliver{&ch, std::move(chosen), std::move(d)});
    }
}

LETTERBOX_DECL basic_delivery broker_state::hand_out(channel_state& ch,
                                                     const std::shared_ptr<queue_state>& q,
                                                     std::shared_ptr<consumer_state> c, queued m,
                                                     bool no_ack, bool by_get) {
    ++m.acquired;
    basic_delivery d;
    d.delivery_tag = ch.next_tag++;
    d.redelivered = m.redelivered;
    d.queue = q->name;
    d.channel = ch.id;
    if (c)
        d.consumer_tag = c->tag;
    const bool count_header = q->quorum() && (by_get || m.delivery_count > 0);
    if (count_header || (q->quorum() && profile_.acquired_count_header)) {
        auto copy = std::make_shared<message>(m.env->msg);
        if (count_header)
            copy->headers.set(headers::x_delivery_count, std::int64_t{m.delivery_count});
        if (profile_.acquired_count_header)
            copy->headers.set(headers::x_acquired_count, std::int64_t{m.acquired - 1});
        d.msg = std::move(copy);
    } else {
        d.msg = std::shared_ptr<const message>(m.env, &m.env->msg);
    }
    ++counters_.delivered;
    counters_.redelivered += m.redelivered ? 1 : 0;
    if (no_ack) {
        ++counters_.acked;
        return d;
    }
    ++q->unacked;
    ++ch.live_unacked;
    if (c) {
        ++c->outstanding;
        ++ch.global_outstanding;
    }
    ch.unacked.push_back(unacked_entry{d.delivery_tag, q, std::move(m), std::move(c),
                                       unacked_entry::unstamped, false});
    if (ch.consumer_timeout_ms != 0)
        review_acks_later(ch);
    return d;
}

LETTERBOX_DECL void broker_state::release(channel_state& ch, unacked_entry& e) {
    e.settled = true;
    if (--ch.live_unacked == 0 && ch.ack_check_at != no_expiry)
        review_acks_later(ch); // the consumer timeout's timer is no longer needed
    if (!e.queue->deleted)
        --e.queue->unacked;
    if (e.consumer) {
        --e.consumer->outstanding;
        --ch.global_outstanding;
    }
}

LETTERBOX_DECL void broker_state::compact(channel_state& ch) {
    while (!ch.unacked.empty() && ch.unacked.front().settled)
        ch.unacked.pop_front();
}

} // namespace letterbox::in_memory::detail
