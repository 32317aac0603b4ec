// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// What a letterbox consumer does with a message its handler gave up on.
enum class failure_handling : std::uint8_t {
    /// `middleware::dead_letter` publishes it to a dead-letter queue itself.
    publish_to_dead_letter_queue,
    /// `basic.reject` without requeue: the queue's dead-letter exchange decides (no exchange:
    /// the broker drops it).
    reject,
    /// `basic.nack` with requeue: the message goes back to the queue.
    requeue,
};

/// The settings of one letterbox consumer that a topology check needs beyond the broker's
/// objects: what the pipeline (`middleware::compose`, `receive_endpoint`) was built with.
struct consumer_settings {
    /// The queue it consumes.
    std::string queue{};
    /// What happens to a message the handler gave up on.
    failure_handling failures = failure_handling::publish_to_dead_letter_queue;
    /// Whether the attempts before `failures` are limited (a retry policy's `max_attempts`).
    /// A `requeue` without a limit spins a poison message forever.
    bool attempts_limited = true;
    /// The broker-level retry queues this consumer's messages wait in (`retry_topology`);
    /// each must dead-letter back to `queue`.
    std::vector<std::string> retry_queues{};
    /// Attempts are counted from the broker's `x-death` header (`redelivery_via::reject`).
    bool attempts_from_x_death = false;
    /// The inbox keeps message ids this long (`inbox_retention`); `std::nullopt`: forever, or
    /// no inbox.
    std::optional<std::chrono::milliseconds> inbox_retention{};
    /// The longest time between two deliveries of one message (`middleware::redelivery_horizon`).
    std::chrono::milliseconds redelivery_horizon{0};
    /// `basic.qos` with `global = true` on the consumer's channel.
    bool global_qos = false;

    friend bool operator==(const consumer_settings&, const consumer_settings&) = default;
};

} // namespace letterbox::lint
