// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/consistent_hash_arguments.hpp>
#include <letterbox/topology/declaration.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// Per-group order across processes, on RabbitMQ's own features rather than a coordinator of
/// letterbox's: a consistent-hash exchange (`exchange_type::consistent_hash`) sends each message
/// to one of `partitions` queues by a hash of its group header, so all the messages of a group
/// go to the same queue; and each queue is a single-active-consumer queue, so one consumer at a
/// time receives from it, whichever process it runs in, and another takes over when it goes.
/// Each worker process consumes every partition, with message groups on
/// (`consumer_options::groups`) to keep the order per group inside a partition while groups run
/// in parallel (docs/message-groups.md, "Across processes").
///
///     <name>          the consistent-hash exchange, hashing the `hash_header` header
///     <name>.0 ...    the partitions, bound with weight 1 each, single active consumer
///
/// Publish to the exchange `<name>` with the group in the header (the outbox relay writes
/// `x-letterbox-group` from the aggregate); the routing key is not used. Declare everything with
/// `topology::async_declare_all(t, layout.declarations(), token)`.
struct group_partitions {
    /// The exchange; the partitions are named after it.
    std::string name{};
    /// How many queues the groups are spread over: the most consumers that receive at once.
    std::uint32_t partitions = 4;
    /// The header whose value is hashed. A message without it goes to one fixed partition.
    std::string hash_header = std::string(headers::group);
    /// Quorum by default: RabbitMQ 3.10.8's classic single-active-consumer queue can crash
    /// while switching consumers (rabbitmq-server#5460, fixed in 3.10.13).
    queue_type type = queue_type::quorum;
    /// The partitions' `x-expires`, if any: the broker deletes a partition unused that long.
    std::optional<std::chrono::milliseconds> expires{};

    std::string partition_name(std::uint32_t i) const { return name + "." + std::to_string(i); }

    /// The exchange (durable).
    topology::exchange exchange() const {
        topology::exchange x;
        x.name = name;
        x.type = exchange_type::consistent_hash;
        x.arguments = consistent_hash_arguments{.hash_header = hash_header}.to_table();
        return x;
    }

    /// The partitions (durable; a quorum queue must be).
    std::vector<topology::queue> queues() const {
        std::vector<topology::queue> out;
        queue_arguments args;
        args.type = type;
        args.single_active_consumer = true;
        args.expires = expires;
        for (std::uint32_t i = 0; i < partitions; ++i)
            out.push_back({.name = partition_name(i), .arguments = args.to_table()});
        return out;
    }

    /// A binding of weight 1 from the exchange to each partition.
    std::vector<topology::binding> bindings() const {
        std::vector<topology::binding> out;
        for (std::uint32_t i = 0; i < partitions; ++i)
            out.push_back({.source = name, .destination = partition_name(i), .routing_key = "1"});
        return out;
    }

    /// The exchange, the partitions, then their bindings: in the order to declare them.
    std::vector<declaration> declarations() const {
        std::vector<declaration> out{exchange()};
        for (auto& q : queues())
            out.emplace_back(std::move(q));
        for (auto& b : bindings())
            out.emplace_back(std::move(b));
        return out;
    }
};

} // namespace letterbox::topology
