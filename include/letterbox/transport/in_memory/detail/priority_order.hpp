// SPDX-License-Identifier: BSL-1.0
#pragma once

// The order of a classic queue's ready messages, priority queues included. Private to the
// in-memory broker (broker_state.hpp).
//
// A classic queue declared with `x-max-priority` keeps one FIFO per priority and serves the
// highest non-empty one first (rabbit_priority_queue). A message's priority is its `priority`
// property, 0 when absent, capped at the queue's maximum. Seen as one sequence, the ready
// messages are sorted by priority (highest first), then by enqueue order; a queue without
// `x-max-priority` files everything under priority 0, which is plain FIFO. The head of that
// sequence is what a consumer or basic.get receives next, what TTL expires and what drop-head
// drops, as on RabbitMQ, whose dropwhile/drop/fetch walk the priorities from the top.

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

/// The priority a queue with `max_priority` (none: not a priority queue) files `m` under.
inline std::uint8_t filed_priority(const message& m, std::optional<std::uint8_t> max_priority) {
    if (!max_priority)
        return 0;
    return std::min(m.properties.priority.value_or(std::uint8_t{0}), *max_priority);
}

/// Where a message filed under `priority` with enqueue number `seq` belongs in `ready`, a
/// sequence of records with `priority` and `seq` members sorted as described above: after
/// everything that comes before it, so a new message goes to the end of its priority and a
/// requeued one back to its original position.
template <class Sequence>
auto ready_position(Sequence& ready, std::uint8_t priority, std::uint64_t seq) {
    return std::upper_bound(ready.begin(), ready.end(), 0, [&](int, const auto& x) {
        return priority != x.priority ? priority > x.priority : seq < x.seq;
    });
}

} // namespace letterbox::in_memory::detail
