// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/lint/policy.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>

#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// The objects of one virtual host that `lint::check_topology` reads: what the code declares
/// (`topology::retry_topology::queues()`, `topology::declaration`s), or what a RabbitMQ
/// definitions export holds (`lint::parse_definitions`). A queue's type is its
/// `x-queue-type` argument (classic when absent). The default exchange `""` and the `amq.*`
/// exchanges exist without being listed.
struct broker_topology {
    std::vector<topology::exchange> exchanges{};
    std::vector<topology::queue> queues{};
    std::vector<topology::binding> bindings{};
    std::vector<policy> policies{};
    /// The version the export came from (`rabbit_version`), empty when unknown.
    std::string rabbit_version{};
    /// The virtual host, when known.
    std::string vhost{};

    friend bool operator==(const broker_topology&, const broker_topology&) = default;
};

} // namespace letterbox::lint
