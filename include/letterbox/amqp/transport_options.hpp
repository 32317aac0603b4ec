// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/transport_event.hpp>
#include <letterbox/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

/// How an `amqp::transport` publishes and recovers. Every member has a working default.
struct transport_options {
    /// Publishes sent and not yet confirmed, at most; more wait in the transport until confirms
    /// arrive. This pipelining is where publish throughput comes from. At least 1.
    std::size_t publish_window = 1000;
    /// The first delay before reconnecting after a lost connection or a failed connect; it
    /// doubles at each further wait, up to `reconnect_delay_max`, and is back at the minimum
    /// once a connect succeeds. With several endpoints the transport waits only between
    /// rounds: a round is one attempt on each endpoint, back to back, whether the attempt
    /// failed to connect or connected and was later lost.
    std::chrono::milliseconds reconnect_delay_min{100};
    std::chrono::milliseconds reconnect_delay_max{5000};
    /// The connection name the broker shows (client property `connection_name`).
    std::string connection_name = "letterbox";
    /// With several endpoints (`url::endpoints()`, the nodes of one cluster): whether the
    /// transport shuffles them, once, when it is made, and then tries them in that order,
    /// round after round. Shuffled, many clients given the same list spread over the nodes
    /// instead of all connecting to the first (as the RabbitMQ Java and .NET clients do).
    /// False: the order written.
    bool shuffle_endpoints = true;
    /// The seed of that shuffle. Unset: a random one (`std::random_device`). Set: the same
    /// endpoints give the same order on every platform (tests, failover drills).
    std::optional<std::uint64_t> endpoint_shuffle_seed{};
    /// The observer of what the transport learns about its broker (`transport_event`): the
    /// broker's version and profile at each connection, and the warnings when letterbox has no
    /// profile for that version or when the version changed from one connection to the next.
    /// Called on the transport's strand, after the step that caused it (never inside another
    /// operation): it must not block; it may start operations on the transport. What it throws
    /// is ignored. May be empty.
    std::function<void(const transport_event&)> on_event{};
};

} // namespace letterbox::amqp
