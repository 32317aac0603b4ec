// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/history_facts.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// I-08 bounded redelivery: each consumer receives each message at most `max_deliveries` times
/// (`broker_delivered` events per (consumer, message id)); typically the retry policy's
/// max_attempts, plus what the run's faults may add (a connection drop redelivers what was
/// unacked).
///
/// One violation per (consumer, message id) over the bound, citing the first delivery, the
/// first one over the bound and the last; in the order of the first delivery.
inline std::vector<invariant_violation> check_bounded_redelivery(const history& h,
                                                                 std::uint32_t max_deliveries) {
    const detail::history_facts facts(h);
    std::vector<invariant_violation> out;
    for (const auto& [key, deliveries] : facts.deliveries()) {
        if (deliveries.size() <= max_deliveries) {
            continue;
        }
        const auto& [consumer, id] = key;
        invariant_violation v{invariant::bounded_redelivery, id, consumer, {}, {}, {}};
        if (const auto* c = facts.find_committed(id)) {
            v.aggregate = c->row.aggregate;
        }
        v.explanation = "consumer " + detail::quote_text(consumer) + " received " +
                        detail::describe_message(facts, id) + " " +
                        std::to_string(deliveries.size()) + " times, more than the bound of " +
                        std::to_string(max_deliveries);
        if (max_deliveries > 0) {
            detail::cite(v, facts, deliveries.front(), "first delivery");
        }
        detail::cite(v, facts, deliveries[max_deliveries], "first over the bound");
        if (deliveries.size() > std::size_t{max_deliveries} + 1) {
            detail::cite(v, facts, deliveries.back(), "last delivery");
        }
        out.push_back(std::move(v));
    }
    detail::sort_by_first_event(out);
    return out;
}

} // namespace letterbox::testing
