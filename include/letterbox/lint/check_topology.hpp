// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/detail/consumer_checks.hpp>
#include <letterbox/lint/detail/dead_letter_checks.hpp>
#include <letterbox/lint/detail/lint_context.hpp>
#include <letterbox/lint/detail/queue_checks.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/rules.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <algorithm>
#include <span>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// Checks a topology for the traps of `lint::rules` on a broker with `profile`, and returns
/// what it found: errors first, then warnings, then notes, each group in the order of
/// `lint::rules` and then of the topology's objects. The same input always gives the same
/// output.
///
/// A finding is reported only when its rule applies to `profile`; its `versions` names every
/// profile of `in_memory::broker_profile::known()` on which the rule applies. `consumers`
/// describes letterbox's consumers of the topology's queues (what they do with failures, their
/// inbox, their qos); without it, only the broker's objects are checked, and every queue
/// without a message TTL counts as one whose consumer may reject.
///
/// A queue's arguments are taken with the policies that apply to it
/// (`lint::effective_arguments`). The default exchange `""` and the `amq.*` exchanges always
/// exist. Work is bounded for large definitions: each route is computed once per exchange and
/// key, and the dead-letter graph's cycles are found in linear time without recursion.
///
///     const auto findings = lint::check_topology(
///         {.queues = topo.queues()}, in_memory::broker_profile::rabbitmq_3_10());
inline std::vector<finding> check_topology(const broker_topology& t,
                                           const in_memory::broker_profile& profile,
                                           std::span<const consumer_settings> consumers = {}) {
    detail::lint_context c(t, profile, consumers);
    // In the order of `rules`.
    detail::check_dlx_missing(c);
    detail::check_dlx_unroutable(c);
    detail::check_dlx_none(c);
    detail::check_dlx_cycle(c);
    detail::check_dlx_ring(c);
    detail::check_requeue_unbounded(c);
    detail::check_delivery_limit_default(c);
    detail::check_delivery_limit_negative(c);
    detail::check_queue_arguments(c);
    detail::check_overflow_dlx(c);
    detail::check_at_least_once(c);
    detail::check_global_qos(c);
    detail::check_inbox_retention(c);
    detail::check_retry_route_back(c);
    detail::check_x_death_client(c);
    detail::check_topic_hash_words(c);
    detail::check_policy_ignored(c);
    detail::check_policy_pattern(c);
    std::vector<finding> out = std::move(c.findings);
    std::stable_sort(out.begin(), out.end(),
                     [](const finding& a, const finding& b) { return a.level > b.level; });
    return out;
}

} // namespace letterbox::lint
