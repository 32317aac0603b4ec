// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/history_facts.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// I-18 convergence: after the faults stop, everything settles within a virtual deadline. For
/// each committed message and each consumer in `consumers`, the message must be settled
/// (applied by that consumer, or dead-lettered with a reason) no later than
/// `max(time of the last fault_injected event, time of its commit) + settle_within`. Without
/// any fault, the deadline counts from the commit.
///
/// One violation per (message, consumer) that settled late or never, in commit order, citing
/// the commit, the last fault and the settling event.
inline std::vector<invariant_violation> check_convergence(const history& h,
                                                          const std::vector<std::string>& consumers,
                                                          std::chrono::nanoseconds settle_within) {
    const detail::history_facts facts(h);
    std::vector<invariant_violation> out;
    std::optional<std::size_t> last_fault;
    if (!facts.faults().empty()) {
        last_fault = facts.faults().back();
    }
    for (const auto& committed : facts.committed()) {
        const auto& id = committed.row.id;
        auto start = h[committed.event].at;
        if (last_fault) {
            start = std::max(start, h[*last_fault].at);
        }
        const auto deadline = start + settle_within;
        for (const auto& consumer : consumers) {
            const auto settled = facts.settled_at(consumer, id);
            if (settled && h[*settled].at <= deadline) {
                continue;
            }
            invariant_violation v{invariant::convergence,  id, consumer,
                                  committed.row.aggregate, {}, {}};
            v.explanation = detail::describe_message(facts, id) + " for consumer " +
                            detail::quote_text(consumer) +
                            (settled ? " settled at @" + std::to_string(h[*settled].at.count())
                                     : std::string{" never settled"}) +
                            ", but the deadline was @" + std::to_string(deadline.count());
            detail::cite(v, facts, committed.event, "committed");
            if (last_fault) {
                detail::cite(v, facts, *last_fault, "last fault");
            }
            if (settled) {
                detail::cite(v, facts, *settled, "settled");
            }
            out.push_back(std::move(v));
        }
    }
    return out;
}

} // namespace letterbox::testing
