// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/lint/severity.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// One rule of `lint::check_topology`, as data: its stable code, its default severity, what it
/// is about, why it matters and how to fix it in general (a finding says the same about its own
/// objects), the broker versions it applies to, and the tests that show the behaviour it
/// predicts. `lint::rules` lists them all; docs/topology-lint.md describes each.
struct rule {
    /// Stable, e.g. `LB-DLX-RING`.
    std::string_view code;
    /// The severity of its findings, unless the finding's circumstances make it milder or worse
    /// (the rule's text says when).
    severity level;
    /// A few words.
    std::string_view title;
    /// What goes wrong.
    std::string_view why;
    /// What to change.
    std::string_view fix;
    /// Whether the rule applies to a broker with this profile.
    bool (*applies)(const in_memory::broker_profile&) noexcept;
    /// Where the behaviour is shown: test names, RabbitMQ sources or release notes.
    std::string_view evidence;
};

/// The names of every profile of `in_memory::broker_profile::known()` on which `r` applies,
/// oldest first.
inline std::vector<std::string> versions_of(const rule& r) {
    std::vector<std::string> out;
    for (const auto& p : in_memory::broker_profile::known())
        if (r.applies(p))
            out.emplace_back(p.name);
    return out;
}

} // namespace letterbox::lint
