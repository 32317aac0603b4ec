// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <cstddef>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// A snapshot of one queue, as `rabbitmqctl list_queues` would show it.
struct queue_info {
    std::string name{};
    topology::queue_type type = topology::queue_type::classic;
    bool durable = true;
    bool exclusive = false;
    bool auto_delete = false;
    std::size_t ready = 0;
    std::size_t unacked = 0;
    std::size_t consumers = 0;
    std::size_t ready_bytes = 0;

    std::size_t total() const noexcept { return ready + unacked; }
};

} // namespace letterbox::in_memory
