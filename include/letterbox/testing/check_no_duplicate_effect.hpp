// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/history_facts.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// I-03 no duplicate effect: for each (consumer, message id), at most one `effect_applied`.
/// Duplicate deliveries are allowed (at-least-once); duplicate effects are not.
///
/// One violation per (consumer, message id) applied more than once, citing every effect; in
/// the order of the first effect.
inline std::vector<invariant_violation> check_no_duplicate_effect(const history& h) {
    const detail::history_facts facts(h);
    std::vector<invariant_violation> out;
    for (const auto& [key, effects] : facts.effects()) {
        if (effects.size() < 2) {
            continue;
        }
        const auto& [consumer, id] = key;
        invariant_violation v{invariant::no_duplicate_effect, id, consumer, {}, {}, {}};
        if (const auto* c = facts.find_committed(id)) {
            v.aggregate = c->row.aggregate;
        }
        v.explanation = "consumer " + detail::quote_text(consumer) + " applied " +
                        detail::describe_message(facts, id) + " " + std::to_string(effects.size()) +
                        " times";
        for (const auto index : effects) {
            detail::cite(v, facts, index, "applied");
        }
        out.push_back(std::move(v));
    }
    detail::sort_by_first_event(out);
    return out;
}

} // namespace letterbox::testing
