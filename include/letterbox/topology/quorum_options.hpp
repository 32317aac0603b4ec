// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <cstdint>
#include <optional>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// How `retry_topology` declares its queues as quorum queues (RabbitMQ 3.8+, replicated with
/// Raft, available while a majority of their members is): the work queue, every retry queue
/// and the dead-letter queue become durable, non-exclusive, non-auto-delete queues with
/// `x-queue-type: quorum`. Quorum-queue TTLs, which the retry queues need, come with
/// RabbitMQ 3.10. Give `retry_topology::quorum` (or `receive_endpoint_options::quorum`) a
/// value, even `{}`, to turn them on; docs/retry-and-dead-letter.md, "Quorum queues", has the
/// whole story.
///
///     const topology::retry_topology topo{.queue = "orders",
///                                         .delays = {1s, 10s},
///                                         .quorum = topology::quorum_options{}};
struct quorum_options {
    /// The work queue's `x-delivery-limit`: a delivery that comes back to the queue (its
    /// consumer crashed or lost its connection, a forward's publish failed, a requeue) more
    /// often than this is dead-lettered by the broker to the dead-letter queue, with the
    /// `x-death` reason `delivery_limit`. It bounds a message that crashes the consumer
    /// every time, which letterbox's own count cannot see (docs/retry-and-dead-letter.md).
    ///
    /// Default 20, RabbitMQ 4.0's own default, declared so that 3.10 behaves the same.
    /// `std::nullopt`: not declared, so the broker's default applies (none before 4.0).
    /// At least 0: a negative limit means "unlimited" on 4.0+ but "dead-letter at the first
    /// return" on 3.10 (seen on 3.10.8), so `retry_topology::check` refuses it; on 4.0+, lift
    /// the limit with a `delivery-limit` policy instead.
    std::optional<std::int64_t> delivery_limit = 20;

    /// How the queues that dead-letter hand their messages on: the work queue (to the
    /// dead-letter queue, or to the first retry queue with `rejects_go_to::retry_queue`) and
    /// every retry queue (back to the work queue, when the delay is over).
    ///
    /// Default `at_least_once` (RabbitMQ 3.10+): each of those queues is declared with
    /// `x-dead-letter-strategy: at-least-once` and `x-overflow: reject-publish` (which it
    /// requires; with no length limit it refuses nothing), so a message is kept in its queue
    /// until the queue it moves to has confirmed it. `at_most_once`: neither argument, the
    /// broker's default: a message moving while its target is unavailable is lost.
    dead_lettering dead_letter_strategy = dead_lettering::at_least_once;

    friend bool operator==(const quorum_options&, const quorum_options&) = default;
};

} // namespace letterbox::topology
