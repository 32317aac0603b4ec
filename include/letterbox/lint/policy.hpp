// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// A RabbitMQ policy (or operator policy), as a definitions export holds it: a regular
/// expression over object names, what kinds of object it applies to, a priority, and its keys
/// (`message-ttl`, `dead-letter-exchange`, `delivery-limit`, ...), without the `x-` of the
/// corresponding queue arguments.
struct policy {
    std::string name{};
    /// An unanchored regular expression matched against the object's name.
    std::string pattern{};
    /// `all`, `queues`, `exchanges`, `classic_queues`, `quorum_queues` or `streams`.
    std::string apply_to = "all";
    std::int64_t priority = 0;
    field_table definition{};
    /// An operator policy (`parameters` with `component: operator_policy`): merged with the
    /// user policy, the more conservative value winning.
    bool operator_policy = false;

    friend bool operator==(const policy&, const policy&) = default;
};

} // namespace letterbox::lint
