// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// Where a work queue sends what its consumers reject without requeue (its
/// `x-dead-letter-exchange`).
enum class rejects_go_to : std::uint8_t {
    /// Nowhere: the work queue has no dead-letter exchange. Use it with explicit
    /// dead-lettering (`middleware::dead_letter` publishes to the dead-letter queue itself).
    nowhere,
    /// The dead-letter queue: native dead-lettering (`basic.reject`, the broker writes
    /// `x-death`).
    dead_letter_queue,
    /// The first retry queue: broker-side retry by rejection (`redelivery_via::reject`); the
    /// retry queue's TTL then dead-letters the message back to the work queue.
    retry_queue,
};

/// The queues around one work queue that delayed redelivery and dead-lettering use:
///
///     <queue>                  the work queue (its dead-letter exchange per `rejects`)
///     <queue>.retry.<N>ms      one retry queue per delay level: x-message-ttl N, and a
///                              dead-letter exchange "" with routing key <queue>, so an
///                              expired message goes back to the work queue
///     <queue>.dlq              the dead-letter queue
///
/// Everything goes through the default exchange, so no exchange or binding is needed, and
/// every queue is durable: a message waiting for its retry survives a consumer restart and a
/// broker restart. Declaring them again with the same arguments is a no-op, so every
/// consumer declares them at start (`topology::async_declare_all(t, topo.queues(), token)`);
/// declaring an existing queue with different arguments fails with
/// `errc::precondition_failed`, as on RabbitMQ.
struct retry_topology {
    /// The work queue.
    std::string queue{};
    /// The delay levels, one retry queue each (usually from `for_policy`).
    std::vector<std::chrono::milliseconds> delays{};
    /// The dead-letter queue; empty means `<queue>.dlq`.
    std::string dead_letter_queue{};
    /// Where the work queue sends rejected messages.
    rejects_go_to rejects = rejects_go_to::nowhere;

    /// The delay levels of a policy's schedule: its base delays (without jitter) for each
    /// retry, distinct and sorted.
    template <class Policy>
    static std::vector<std::chrono::milliseconds> levels_of(const Policy& p) {
        std::vector<std::chrono::milliseconds> out;
        for (std::uint32_t k = 1; k < p.max_attempts() && k <= 64; ++k) {
            std::chrono::milliseconds d{0};
            if constexpr (requires { p.base_delay(k); })
                d = std::chrono::duration_cast<std::chrono::milliseconds>(p.base_delay(k));
            else
                d = p.decide({.attempt = k}).delay;
            if (d.count() > 0 && std::find(out.begin(), out.end(), d) == out.end())
                out.push_back(d);
        }
        std::sort(out.begin(), out.end());
        return out;
    }

    std::string dead_letter_queue_name() const {
        return dead_letter_queue.empty() ? queue + ".dlq" : dead_letter_queue;
    }
    std::string retry_queue_name(std::chrono::milliseconds level) const {
        return queue + ".retry." + std::to_string(level.count()) + "ms";
    }

    /// The level a delay waits on: the smallest level not shorter than `delay`, or the
    /// longest level when `delay` exceeds them all. `delay` may then be shortened per message
    /// (its expiration), never lengthened: the level's TTL bounds it.
    std::chrono::milliseconds level_for(std::chrono::milliseconds delay) const {
        auto sorted = delays;
        std::sort(sorted.begin(), sorted.end());
        for (auto l : sorted)
            if (l >= delay)
                return l;
        return sorted.empty() ? std::chrono::milliseconds{0} : sorted.back();
    }

    /// Every queue to declare, the work queue last (its dead-letter target exists first).
    std::vector<topology::queue> queues() const {
        std::vector<topology::queue> out;
        for (auto level : delays) {
            queue_arguments a;
            a.message_ttl = level;
            a.dead_letter_exchange = "";
            a.dead_letter_routing_key = this->queue;
            out.push_back({.name = retry_queue_name(level), .arguments = a.to_table()});
        }
        out.push_back({.name = dead_letter_queue_name()});
        queue_arguments work;
        if (rejects == rejects_go_to::dead_letter_queue) {
            work.dead_letter_exchange = "";
            work.dead_letter_routing_key = dead_letter_queue_name();
        } else if (rejects == rejects_go_to::retry_queue && !delays.empty()) {
            work.dead_letter_exchange = "";
            work.dead_letter_routing_key = retry_queue_name(delays.front());
        }
        out.push_back({.name = this->queue, .arguments = work.to_table()});
        return out;
    }
};

} // namespace letterbox::topology
