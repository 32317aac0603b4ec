// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// What a binding delivers to: a queue (`queue.bind`) or another exchange (`exchange.bind`).
enum class destination_kind { queue, exchange };

/// A binding from `source` (an exchange) to `destination`, with a binding key and arguments
/// (used by headers exchanges). Bindings form a set keyed by all four fields: two bindings that
/// differ only in their arguments are distinct.
struct binding {
    std::string source{};
    std::string destination{};
    std::string routing_key{};
    field_table arguments{};
    destination_kind kind = destination_kind::queue;

    friend bool operator==(const binding&, const binding&) = default;
};

} // namespace letterbox::topology
