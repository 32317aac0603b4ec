// SPDX-License-Identifier: BSL-1.0
#pragma once

// Messages returned to their queue: by nack, reject, recover or a closed channel.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL void broker_state::requeue_all(channel_state& ch, return_kind how) {
    // Grouped per queue, each group in its original (enqueue) order.
    std::vector<std::pair<std::shared_ptr<queue_state>, std::vector<queued>>> groups;
    for (auto& e : ch.unacked) {
        if (e.settled)
            continue;
        release(ch, e);
        if (e.queue->deleted)
            continue;
        auto g =
            std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == e.queue; });
        if (g == groups.end()) {
            groups.emplace_back(e.queue, std::vector<queued>{});
            g = std::prev(groups.end());
        }
        g->second.push_back(std::move(e.m));
    }
    compact(ch);
    for (auto& [q, ms] : groups) {
        std::sort(ms.begin(), ms.end(),
                  [](const queued& a, const queued& b) { return a.seq < b.seq; });
        // In original order: the delivery limit is checked front to back, so the ones past
        // it are dead-lettered in original order too (DLX-44).
        for (auto& m : ms)
            requeue_one(*q, std::move(m), how);
        after_change(*q, false);
    }
}

LETTERBOX_DECL void broker_state::requeue_one(queue_state& q, queued m, return_kind how) {
    if (count_return(q, m, how))
        place_returned(q, std::move(m), how);
}

LETTERBOX_DECL bool broker_state::count_return(queue_state& q, queued& m, return_kind how) {
    m.redelivered = true;
    ++counters_.requeued;
    if (q.quorum()) {
        if (how != return_kind::nack || profile_.nack_increments_delivery_count)
            ++m.delivery_count;
        if (q.delivery_limit && m.delivery_count > *q.delivery_limit) {
            dead_letter(q, std::move(m), dead_letter_reason::delivery_limit);
            return false;
        }
    }
    return true;
}

LETTERBOX_DECL void broker_state::place_returned(queue_state& q, queued m, return_kind how) {
    q.ready_bytes += m.bytes();
    if (q.quorum()) {
        // rabbit_fifo serves its returns before the other ready messages, in return order.
        // 3.10 and 3.13 send a nack, reject or recover requeue to the back instead when the
        // queue has no delivery limit; a closed channel's messages are returns everywhere
        // (§0.3 1, RMQ-ACK-23).
        const bool first = profile_.quorum_returns_first || how == return_kind::channel_closed ||
                           q.delivery_limit.has_value();
        (first ? q.returns : q.ready).push_back(std::move(m));
    } else {
        const auto pos = ready_position(q.ready, m.priority, m.seq);
        q.ready.insert(pos, std::move(m));
    }
    if (overflow_of(q) == topology::overflow_behaviour::drop_head)
        drop_head_while_over(q); // 3.10.8: requeues into a full drop-head queue drop the head
}

} // namespace letterbox::in_memory::detail
