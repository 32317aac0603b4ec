// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstddef>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

/// How an `amqp::transport` publishes and recovers. Every member has a working default.
struct transport_options {
    /// Publishes sent and not yet confirmed, at most; more wait in the transport until confirms
    /// arrive. This pipelining is where publish throughput comes from. At least 1.
    std::size_t publish_window = 1000;
    /// The first delay before reconnecting after a lost connection or a failed connect; it
    /// doubles after each failed attempt, up to `reconnect_delay_max`.
    std::chrono::milliseconds reconnect_delay_min{100};
    std::chrono::milliseconds reconnect_delay_max{5000};
    /// The connection name the broker shows (client property `connection_name`).
    std::string connection_name = "letterbox";
};

} // namespace letterbox::amqp
