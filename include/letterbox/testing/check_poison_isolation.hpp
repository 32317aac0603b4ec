// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/history_facts.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// I-09 poison isolation: a poison message does not stop the others. A message is poison when
/// a `fault_injected` event of kind `fault_kind::poison_message` names it. Then, for each
/// consumer in `consumers`:
/// - every poison message is dead-lettered with a reason (by that consumer, or before any);
/// - every other committed message is applied by that consumer, unless a fault named it too
///   (a permanent handler failure, say) and it was dead-lettered with a reason. A message that
///   is neither is *starved*.
///
/// Vacuous when the history has no poison message. One violation per (message, consumer), in
/// the order of the commits.
inline std::vector<invariant_violation>
check_poison_isolation(const history& h, const std::vector<std::string>& consumers) {
    const detail::history_facts facts(h);
    std::vector<invariant_violation> out;
    const auto& poison = facts.poison();
    if (poison.empty()) {
        return out;
    }
    for (const auto& committed : facts.committed()) {
        const auto& id = committed.row.id;
        const bool is_poison = std::find(poison.begin(), poison.end(), id) != poison.end();
        for (const auto& consumer : consumers) {
            invariant_violation v{invariant::poison_isolation, id, consumer,
                                  committed.row.aggregate,     {}, {}};
            const auto dead = facts.dead_lettered_at(consumer, id);
            if (is_poison) {
                if (dead) {
                    continue;
                }
                v.explanation = "poison " + detail::describe_message(facts, id) +
                                " was not dead-lettered with a reason for consumer " +
                                detail::quote_text(consumer);
                detail::cite(v, facts, *facts.targeted_at(id), "marked poison");
            } else {
                if (facts.applied_at(consumer, id) || (dead && facts.targeted_at(id))) {
                    continue;
                }
                v.explanation = detail::describe_message(facts, id) + " was starved: consumer " +
                                detail::quote_text(consumer) +
                                " never applied it while the run had " +
                                std::to_string(poison.size()) + " poison message(s)";
                detail::cite(v, facts, committed.event, "committed");
                if (dead) {
                    detail::cite(v, facts, *dead, "dead-lettered, though no fault named it");
                }
            }
            if (const auto last = facts.last_mention(id)) {
                detail::cite(v, facts, *last, "last seen");
            }
            out.push_back(std::move(v));
        }
    }
    return out;
}

} // namespace letterbox::testing
