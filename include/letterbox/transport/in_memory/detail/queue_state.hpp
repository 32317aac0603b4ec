// SPDX-License-Identifier: BSL-1.0
#pragma once

// A queue of the in-memory broker: its declaration, its ready messages, its consumers and its
// TTL and x-expires timers. Private to the in-memory broker (broker_state.hpp).

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/detail/clock_adapter.hpp>
#include <letterbox/transport/in_memory/detail/envelope.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

struct consumer_state;

struct queue_state {
    std::weak_ptr<queue_state> self;
    std::string name;
    bool durable = true;
    bool exclusive = false;
    bool auto_delete = false;
    std::uint64_t owner = 0; // connection id of an exclusive queue
    field_table arguments;
    topology::queue_arguments args;
    std::optional<std::int64_t> delivery_limit;
    std::optional<std::uint8_t> max_priority; // classic x-max-priority
    std::deque<queued> ready;   // classic: sorted by priority, then seq (priority_order.hpp)
    std::deque<queued> returns; // quorum with `quorum_returns_first`: served first
    std::size_t ready_bytes = 0;
    std::size_t unacked = 0;
    // In registration order. With `single_active_consumer` the first one is the active consumer
    // and the others wait: the active one is the oldest consumer left, because a new consumer
    // never takes over and the next oldest takes over when the active one goes.
    std::vector<std::shared_ptr<consumer_state>> consumers;
    std::size_t next_consumer = 0;       // round robin, when not `single_active_consumer`
    bool single_active_consumer = false; // x-single-active-consumer: true
    std::unique_ptr<timer_adapter> timer;
    std::int64_t timer_deadline = no_expiry;
    // x-expires: the queue is deleted once unused (no consumer, get or declare) until then.
    std::unique_ptr<timer_adapter> expiry_timer;
    std::int64_t unused_until = no_expiry;
    bool deleted = false;

    bool quorum() const noexcept { return args.type == topology::queue_type::quorum; }
    std::size_t ready_count() const noexcept { return ready.size() + returns.size(); }
    // The consumer count of a queue.declare-ok. A 3.10 quorum queue counts the consumers its
    // consumer map holds (rabbit_fifo:query_stat), and a single-active-consumer one keeps only
    // the active consumer there: the waiting ones are not counted (seen on 3.10.8).
    // `rabbitmqctl list_queues`, like `queue_info`, counts every consumer.
    std::size_t declare_ok_consumers() const noexcept {
        if (quorum() && single_active_consumer)
            return consumers.empty() ? 0 : 1;
        return consumers.size();
    }
    queued* head() noexcept {
        if (!returns.empty())
            return &returns.front();
        return ready.empty() ? nullptr : &ready.front();
    }
    queued pop_head() {
        auto& from = returns.empty() ? ready : returns;
        queued m = std::move(from.front());
        from.pop_front();
        ready_bytes -= m.bytes();
        return m;
    }
};

} // namespace letterbox::in_memory::detail
