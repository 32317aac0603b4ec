// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/lint/severity.hpp>

#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// One trap found in a topology by `lint::check_topology`.
struct finding {
    severity level = severity::warning;
    /// The rule's stable code, e.g. `LB-DLX-RING` (docs/topology-lint.md lists them all).
    std::string code{};
    /// The objects involved, each as `queue 'orders'`, `exchange 'dlx'`, `policy 'ttl'`,
    /// `binding 'orders' -> 'billing'` or `consumer of 'orders'`.
    std::vector<std::string> objects{};
    /// The broker profiles (`in_memory::broker_profile::name`) on which it applies, among those
    /// checked.
    std::vector<std::string> versions{};
    /// One sentence: what goes wrong, and when.
    std::string why{};
    /// What to change.
    std::string fix{};

    friend bool operator==(const finding&, const finding&) = default;
};

} // namespace letterbox::lint
