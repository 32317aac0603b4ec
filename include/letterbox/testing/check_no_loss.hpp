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

/// I-01 no loss: every committed message ends, for each consumer in `consumers`, as an effect
/// that consumer applied, or as a dead letter with a non-empty reason (dead-lettered by that
/// consumer, or before any consumer).
///
/// Checks the end state of the whole history, so run it after the final drain. A message
/// dead-lettered without a reason is reported too: a dead letter nobody can explain is a loss.
/// Returns one violation per (message, consumer), in commit order; each cites the commit, the
/// reasonless dead letters if any, and the last event that named the message.
inline std::vector<invariant_violation> check_no_loss(const history& h,
                                                      const std::vector<std::string>& consumers) {
    const detail::history_facts facts(h);
    std::vector<invariant_violation> out;
    for (const auto& committed : facts.committed()) {
        const auto& id = committed.row.id;
        for (const auto& consumer : consumers) {
            if (facts.settled_at(consumer, id)) {
                continue;
            }
            invariant_violation v{invariant::no_loss,      id, consumer,
                                  committed.row.aggregate, {}, {}};
            const auto deliveries = facts.deliveries_of(consumer, id).size();
            v.explanation = detail::describe_message(facts, id) + " was committed, but consumer " +
                            detail::quote_text(consumer) +
                            " neither applied it nor saw it dead-lettered with a reason (" +
                            std::to_string(deliveries) + " deliveries to it)";
            detail::cite(v, facts, committed.event, "committed");
            for (const auto index : facts.reasonless_dead_letters(consumer, id)) {
                detail::cite(v, facts, index, "dead-lettered without a reason");
            }
            if (const auto last = facts.last_mention(id)) {
                detail::cite(v, facts, *last, "last seen");
            } else {
                v.explanation += "\n  never published, delivered or applied";
            }
            out.push_back(std::move(v));
        }
    }
    return out;
}

} // namespace letterbox::testing
