// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// A queue declaration (`queue.declare`). `arguments` holds the `x-` arguments; build them
/// with `queue_arguments` for type safety. An empty name asks the broker to generate one.
struct queue {
    std::string name{};
    bool durable = true;
    bool exclusive = false;
    bool auto_delete = false;
    field_table arguments{};

    friend bool operator==(const queue&, const queue&) = default;
};

} // namespace letterbox::topology
