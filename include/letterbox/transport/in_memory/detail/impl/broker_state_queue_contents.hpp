// SPDX-License-Identifier: BSL-1.0
#pragma once

// Storing a message in a queue: its expiry, the length limits and overflow.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL std::int64_t broker_state::deadline_for(const queue_state& q,
                                                       std::int64_t message_ttl_ms) const {
    std::int64_t ttl = message_ttl_ms;
    if (q.args.message_ttl)
        ttl = ttl < 0 ? q.args.message_ttl->count()
                      : std::min<std::int64_t>(ttl, q.args.message_ttl->count());
    if (ttl < 0)
        return no_expiry;
    return now() + ttl * 1'000'000;
}

LETTERBOX_DECL bool broker_state::over_limit(const queue_state& q, std::size_t extra_count,
                                             std::size_t extra_bytes) const {
    return (q.args.max_length &&
            q.ready_count() + extra_count > static_cast<std::size_t>(*q.args.max_length)) ||
           (q.args.max_length_bytes &&
            q.ready_bytes + extra_bytes > static_cast<std::size_t>(*q.args.max_length_bytes));
}

LETTERBOX_DECL topology::overflow_behaviour broker_state::overflow_of(const queue_state& q) const {
    auto o = q.args.overflow.value_or(topology::overflow_behaviour::drop_head);
    if (q.quorum() && o == topology::overflow_behaviour::reject_publish_dlx)
        return topology::overflow_behaviour::drop_head; // 3.10.8, observed
    return o;
}

LETTERBOX_DECL bool broker_state::enqueue(queue_state& q, std::shared_ptr<const envelope> env,
                                          std::int64_t message_ttl_ms) {
    queued m;
    m.env = std::move(env);
    m.seq = ++last_seq_;
    m.expires_at = deadline_for(q, message_ttl_ms);
    m.priority = filed_priority(m.env->msg, q.max_priority);
    const auto mode = overflow_of(q);
    if (mode != topology::overflow_behaviour::drop_head) {
        // Quorum queues check the limit before the publish and may overshoot by one.
        const bool full = q.quorum() ? over_limit(q, 0, 0) : over_limit(q, 1, m.bytes());
        if (full) {
            if (mode == topology::overflow_behaviour::reject_publish_dlx) {
                ++counters_.enqueued;
                dead_letter(q, std::move(m), dead_letter_reason::maxlen);
            } else {
                ++counters_.refused;
            }
            return false;
        }
    }
    ++counters_.enqueued;
    q.ready_bytes += m.bytes();
    if (q.max_priority) {
        const auto pos = ready_position(q.ready, m.priority, m.seq);
        q.ready.insert(pos, std::move(m));
    } else {
        q.ready.push_back(std::move(m));
    }
    if (mode == topology::overflow_behaviour::drop_head)
        drop_head_while_over(q);
    return true;
}

LETTERBOX_DECL void broker_state::drop_head_while_over(queue_state& q) {
    while (q.ready_count() > 0 && over_limit(q, 0, 0))
        dead_letter(q, q.pop_head(), dead_letter_reason::maxlen);
}

} // namespace letterbox::in_memory::detail
