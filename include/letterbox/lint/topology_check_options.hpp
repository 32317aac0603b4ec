// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/policy.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// The topology check a `receive_endpoint` runs when it builds a consumer
/// (docs/topology-lint.md, "When a pipeline is built"): its queues and its consumer's settings
/// go through `check`, an error refuses the consumer (`consume` throws `letterbox::error` with
/// `errc::invalid_argument`, naming each finding), and the other findings go to `on_finding`.
///
///     #include <letterbox/lint.hpp>
///
///     auto orders = letterbox::receive_endpoint(
///         transport, {.queue = "orders",
///                     .topology_check = {.check = letterbox::lint::check_topology,
///                                        .on_finding = log_finding}});
///
/// It is off unless `check` is set: the lint's code costs each translation unit that compiles
/// it about 2.5 s, which a program pays only where it includes `letterbox/lint.hpp`.
struct topology_check_options {
    /// The check: `lint::check_topology`, or any function of its signature. Empty (the
    /// default): no check.
    std::function<std::vector<finding>(const broker_topology&, const in_memory::broker_profile&,
                                       std::span<const consumer_settings>)>
        check{};
    /// The broker version the check assumes. `std::nullopt` (the default): the transport's
    /// (`in_memory::transport::profile()`, or `amqp::transport::broker()` once connected), and
    /// when the transport does not know it yet, every profile of
    /// `in_memory::broker_profile::known()`: then only an error on all of them refuses the
    /// consumer, and one on some of them goes to `on_finding`.
    std::optional<in_memory::broker_profile> profile{};
    /// The broker's policies that apply to the endpoint's queues, which the check cannot see
    /// otherwise: for instance a `delivery-limit: -1` policy on the dead-letter queues of
    /// quorum endpoints on RabbitMQ 4.0+ (`LB-QQ-DELIVERY-LIMIT-DEFAULT`).
    std::vector<policy> policies{};
    /// Receives each finding that does not refuse the consumer, on the thread that calls
    /// `consume`.
    std::function<void(const finding&)> on_finding{};
};

} // namespace letterbox::lint
