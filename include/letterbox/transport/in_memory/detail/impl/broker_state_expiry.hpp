// SPDX-License-Identifier: BSL-1.0
#pragma once

// Message TTL at the head of a queue, its timer, and queue expiry (x-expires).
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

} // namespace letterbox::in_memory::detail
