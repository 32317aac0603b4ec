// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/history_facts.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include <cstddef>
#include <set>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// I-02 no phantom: nothing is observed that was not committed first. A message is observed
/// when the relay publishes, confirms or marks it, the broker delivers it, a handler applies it,
/// an inbox records it, a consumer acks or nacks it, or it is dead-lettered. Each observation
/// must come after a `transaction_committed` that wrote the message's row.
///
/// Three cases, one violation per message, citing its first offending observation: the message
/// belongs to a rolled-back transaction (and was never committed); it was never written at all;
/// or it was observed before its commit (MassTransit's "not delivered before SaveChanges").
/// Faults that name a message are not observations.
inline std::vector<invariant_violation> check_no_phantom(const history& h) {
    const detail::history_facts facts(h);
    std::vector<invariant_violation> out;
    std::set<message_id> reported;
    for (std::size_t i = 0; i < h.size(); ++i) {
        if (std::holds_alternative<fault_injected>(h[i].what)) {
            continue;
        }
        const auto id = event_message_id(h[i].what);
        if (!id || reported.contains(*id)) {
            continue;
        }
        const auto* committed = facts.find_committed(*id);
        if (committed != nullptr && committed->event < i) {
            continue;
        }
        reported.insert(*id);
        invariant_violation v{invariant::no_phantom, *id, {}, {}, {}, {}};
        if (committed != nullptr) {
            v.aggregate = committed->row.aggregate;
            v.explanation = detail::describe_message(facts, *id) +
                            " was observed before the transaction that wrote it committed";
            detail::cite(v, facts, i, "observed");
            detail::cite(v, facts, committed->event, "committed later");
        } else if (const auto rolled_back = facts.rolled_back_at(*id)) {
            v.explanation = detail::describe_message(facts, *id) +
                            " was observed, but the transaction that wrote it rolled back";
            detail::cite(v, facts, *rolled_back, "rolled back");
            detail::cite(v, facts, i, "observed");
        } else {
            v.explanation = detail::describe_message(facts, *id) +
                            " was observed, but no transaction ever wrote it";
            detail::cite(v, facts, i, "observed");
        }
        out.push_back(std::move(v));
    }
    detail::sort_by_first_event(out);
    return out;
}

} // namespace letterbox::testing
