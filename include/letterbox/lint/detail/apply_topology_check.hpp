// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/topology_check_options.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <concepts>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

/// The broker version a transport says its broker has: `profile()` (the in-memory transport),
/// or the profile of `broker()` once it is known (`amqp::transport`); else none.
template <class Transport>
std::optional<in_memory::broker_profile> transport_profile(const Transport& t) {
    if constexpr (requires {
                      { t.profile() } -> std::convertible_to<in_memory::broker_profile>;
                  }) {
        return t.profile();
    } else if constexpr (requires { t.broker()->profile; }) {
        if (const auto b = t.broker())
            return b->profile;
        return std::nullopt;
    } else {
        return std::nullopt;
    }
}

/// Runs `options.check` on `t` and `consumer` for each of `profiles`: throws `letterbox::error`
/// (`errc::invalid_argument`) naming every error found on all of them, and gives each other
/// finding, once, to `options.on_finding`. `what` names the pipeline in the message.
inline void apply_topology_check(const topology_check_options& options, const broker_topology& t,
                                 const consumer_settings& consumer,
                                 std::span<const in_memory::broker_profile> profiles,
                                 std::string_view what) {
    if (!options.check || profiles.empty())
        return;
    struct seen {
        finding f;
        std::size_t profiles_with_it = 0;
    };
    std::vector<seen> all;
    for (const auto& p : profiles)
        for (auto& f : options.check(t, p, std::span(&consumer, 1))) {
            bool merged = false;
            for (auto& s : all)
                if (s.f.code == f.code && s.f.objects == f.objects && s.f.level == f.level) {
                    ++s.profiles_with_it;
                    merged = true;
                    break;
                }
            if (!merged)
                all.push_back({std::move(f), 1});
        }
    std::string refused;
    for (const auto& s : all) {
        if (s.f.level == severity::error && s.profiles_with_it == profiles.size()) {
            refused +=
                (refused.empty() ? "" : "; ") + s.f.code + ": " + s.f.why + " Fix: " + s.f.fix;
        } else if (options.on_finding) {
            options.on_finding(s.f);
        }
    }
    if (!refused.empty())
        throw letterbox::error(errc::invalid_argument,
                               std::string(what) + ": the topology check refuses it: " + refused);
}

} // namespace letterbox::lint::detail
