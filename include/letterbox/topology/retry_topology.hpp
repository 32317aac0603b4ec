// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/quorum_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// Where a work queue sends what its consumers reject without requeue (its
/// `x-dead-letter-exchange`).
enum class rejects_go_to : std::uint8_t {
    /// Nowhere: the work queue has no dead-letter exchange. Use it with explicit
    /// dead-lettering (`middleware::dead_letter` publishes to the dead-letter queue itself).
    /// A quorum work queue (`retry_topology::quorum`) gets the dead-letter queue all the same:
    /// it dead-letters by itself (its delivery limit), and what it gives up on must not vanish.
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
///
/// With `quorum` set, every queue is a quorum queue (`quorum_options`): replicated, with a
/// delivery limit on the work queue and at-least-once dead-lettering by default. A classic
/// queue cannot be declared again as a quorum queue (406): a topology that changes type needs
/// new queue names, or the old queues drained and deleted first.
struct retry_topology {
    /// The work queue.
    std::string queue{};
    /// The delay levels, one retry queue each (usually from `for_policy`).
    std::vector<std::chrono::milliseconds> delays{};
    /// The dead-letter queue; empty means `<queue>.dlq`.
    std::string dead_letter_queue{};
    /// Where the work queue sends rejected messages.
    rejects_go_to rejects = rejects_go_to::nowhere;
    /// Quorum queues with these settings; `std::nullopt` (the default): classic queues.
    std::optional<quorum_options> quorum{};

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

    /// Throws `letterbox::error` with `errc::invalid_argument` when the topology is one that
    /// RabbitMQ would refuse or not honour: a quorum topology without a queue name (quorum
    /// queues cannot be server-named), a negative delivery limit (its meaning depends on the
    /// broker's version, see `quorum_options::delivery_limit`), a delivery limit together with
    /// `rejects_go_to::retry_queue` (the messages the limit gives up on would go to the retry
    /// queue and back to the work queue, forever or until RabbitMQ drops them as a cycle), or
    /// any queue that `queue::check` refuses. `queues()` and the `redelivery` layer check.
    void check() const {
        auto refuse = [&](const std::string& why) {
            throw letterbox::error(errc::invalid_argument,
                                   "retry topology of queue '" + queue + "': " + why);
        };
        if (quorum) {
            if (queue.empty())
                refuse("quorum queues cannot be server-named: give the work queue a name");
            if (quorum->delivery_limit && *quorum->delivery_limit < 0)
                refuse("a negative delivery limit is unlimited on RabbitMQ 4.0+ but dead-letters "
                       "at the first return on 3.10; leave it unset (std::nullopt) for the "
                       "broker's default, or lift it with a policy");
            if (quorum->delivery_limit && rejects == rejects_go_to::retry_queue && !delays.empty())
                refuse("a delivery limit with rejects_go_to::retry_queue would send what the "
                       "limit gives up on back to the work queue through the retry queue; use "
                       "another rejects_go_to, or no delivery limit");
        }
        for (const auto& q : declarations())
            q.check();
    }

    /// Every queue to declare, the work queue last (its dead-letter target exists first).
    /// Throws as `check()` does.
    std::vector<topology::queue> queues() const {
        check();
        return declarations();
    }

private:
    // The queues, unchecked.
    std::vector<topology::queue> declarations() const {
        const bool at_least_once =
            quorum && quorum->dead_letter_strategy == dead_lettering::at_least_once;
        auto typed = [&](queue_arguments a, bool dead_letters) {
            if (!quorum)
                return a;
            a.type = queue_type::quorum;
            if (dead_letters && at_least_once) {
                a.dead_letter_strategy = dead_lettering::at_least_once;
                a.overflow = overflow_behaviour::reject_publish;
            }
            return a;
        };
        std::vector<topology::queue> out;
        for (auto level : delays) {
            queue_arguments a;
            a.message_ttl = level;
            a.dead_letter_exchange = "";
            a.dead_letter_routing_key = this->queue;
            out.push_back(
                {.name = retry_queue_name(level), .arguments = typed(a, true).to_table()});
        }
        out.push_back({.name = dead_letter_queue_name(), .arguments = typed({}, false).to_table()});
        queue_arguments work;
        if (rejects == rejects_go_to::retry_queue && !delays.empty()) {
            work.dead_letter_exchange = "";
            work.dead_letter_routing_key = retry_queue_name(delays.front());
        } else if (rejects == rejects_go_to::dead_letter_queue || quorum) {
            work.dead_letter_exchange = "";
            work.dead_letter_routing_key = dead_letter_queue_name();
        }
        if (quorum)
            work.delivery_limit = quorum->delivery_limit;
        const bool dead_letters = work.dead_letter_exchange.has_value();
        out.push_back({.name = this->queue, .arguments = typed(work, dead_letters).to_table()});
        return out;
    }
};

} // namespace letterbox::topology
