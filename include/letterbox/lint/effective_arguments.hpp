// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/lint/detail/policy_match.hpp>
#include <letterbox/lint/detail/queue_facts.hpp>
#include <letterbox/lint/policy.hpp>
#include <letterbox/topology/queue.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

namespace detail {

/// How a policy value and a queue argument of the same key combine.
enum class merge_kind : std::uint8_t {
    lower,          ///< the lower of the two (the more conservative)
    argument_wins,  ///< the argument when there is one, else the policy's
    policy_wins,    ///< the policy's when there is one, else the argument
    delivery_limit, ///< 4.0: the higher when either is negative, else the lower
};

/// The policy keys that become queue arguments (`x-` + key) and how they merge, per queue
/// type (rabbit_amqqueue_process.erl L429 for classic queues, rabbit_quorum_queue.erl L318
/// for quorum queues, v4.0.0).
inline std::optional<merge_kind> merge_of(std::string_view key, queue_kind k) noexcept {
    if (key == "expires" || key == "message-ttl" || key == "max-length" ||
        key == "max-length-bytes")
        return merge_kind::lower;
    if (key == "dead-letter-exchange" || key == "dead-letter-routing-key")
        return merge_kind::argument_wins;
    if (key == "overflow")
        return k == queue_kind::quorum ? merge_kind::policy_wins : merge_kind::argument_wins;
    if (k == queue_kind::quorum && key == "dead-letter-strategy")
        return merge_kind::argument_wins;
    if (k == queue_kind::quorum && key == "delivery-limit")
        return merge_kind::delivery_limit;
    return std::nullopt;
}

/// `a` and `b` merged by `how`, with `a` the argument (or the user policy) and `b` the policy
/// (or the operator policy). `lower` and `delivery_limit` need integers on both sides; when
/// one side is not an integer, `a` is kept.
inline field_value merge_values(const field_value& a, const field_value& b, merge_kind how) {
    const auto x = a.as_integer();
    const auto y = b.as_integer();
    switch (how) {
    case merge_kind::lower:
        return x && y ? field_value(std::min(*x, *y)) : a;
    case merge_kind::delivery_limit:
        if (!x || !y)
            return a;
        return field_value(*x < 0 || *y < 0 ? std::max(*x, *y) : std::min(*x, *y));
    case merge_kind::argument_wins:
        return a;
    case merge_kind::policy_wins:
        return b;
    }
    return a;
}

/// The user policy's and the operator policy's definitions as one, the more conservative value
/// winning where both set a key (rabbit_policies.erl merge_policy_value: the lower, the
/// operator's overflow).
inline field_table combined_policy(const policy* user, const policy* op) {
    field_table out;
    if (user)
        out = user->definition;
    if (!op)
        return out;
    for (const auto& [key, value] : op->definition) {
        const auto* mine = out.find(key);
        if (!mine)
            out.set(key, value);
        else if (key == "overflow")
            out.set(key, value);
        else if (key == "delivery-limit")
            out.set(key, merge_values(*mine, value, merge_kind::delivery_limit));
        else
            out.set(key, merge_values(*mine, value, merge_kind::lower));
    }
    return out;
}

/// `arguments` with the keys of `definition` (a policy, already combined) merged in.
inline field_table merge_policy(const field_table& arguments, const field_table& definition,
                                queue_kind k) {
    field_table out = arguments;
    for (const auto& [key, value] : definition) {
        const auto how = merge_of(key, k);
        if (!how)
            continue;
        const std::string name = "x-" + key;
        if (const auto* arg = out.find(name))
            out.set(name, merge_values(*arg, value, *how));
        else
            out.set(name, value);
    }
    return out;
}

} // namespace detail

/// A queue's arguments as the broker uses them: its declared `x-` arguments merged with the
/// policy that applies to it and the operator policy that applies to it (as RabbitMQ 3.10 to 4.x):
///
/// - the policy that applies is the one of highest priority (the first listed on a tie, where
///   RabbitMQ picks either) among those whose pattern, an unanchored regular expression,
///   matches the queue's name and whose apply-to fits its type (`all`, `queues`,
///   `classic_queues`, `quorum_queues`); a policy holding a key the queue's type does not
///   support does not apply at all, and the next one does (rabbitmq-server#7350). The same for
///   operator policies; a pattern that is not a valid regular expression, or is longer than
///   1,000 characters, matches nothing;
/// - an operator policy and a user policy combine to the more conservative value: the lower,
///   and the operator's `overflow`;
/// - the result combines with the arguments: the lower for `expires`, `message-ttl`,
///   `max-length` and `max-length-bytes`; the argument wins for `dead-letter-exchange`,
///   `dead-letter-routing-key` and `dead-letter-strategy`; for `overflow` the argument wins
///   on a classic queue and the policy on a quorum queue; a quorum queue's `delivery-limit` is
///   the higher when either is negative, else the lower (RabbitMQ 4.0).
///
/// Other policy keys are left out. The queue's type is its `x-queue-type` argument.
inline field_table effective_arguments(const topology::queue& q, std::span<const policy> policies) {
    const auto k = detail::kind_of(q.arguments);
    const detail::policy_set set(policies);
    const auto r = set.resolve(q.name, k);
    return detail::merge_policy(q.arguments, detail::combined_policy(r.user, r.op), k);
}

} // namespace letterbox::lint
