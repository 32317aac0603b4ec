// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/history_facts.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

namespace detail {

/// The (consumer, aggregate) pairs whose order `check_aggregate_order` does not check: a
/// `delivery_deferred` of that consumer names a committed message of that aggregate.
inline std::set<std::pair<std::string, std::string>>
deferred_aggregates(const history_facts& facts) {
    std::set<std::pair<std::string, std::string>> out;
    for (const auto& e : facts.events()) {
        if (const auto* d = std::get_if<delivery_deferred>(&e.what)) {
            if (const auto* c = facts.find_committed(d->id); c && !c->row.aggregate.empty()) {
                out.emplace(d->consumer, c->row.aggregate);
            }
        }
    }
    return out;
}

/// Each (consumer, aggregate) pair with an effect in `h` (of a non-empty aggregate), and
/// whether `check_aggregate_order` checks its order (false: it has a deferred delivery).
inline std::map<std::pair<std::string, std::string>, bool> aggregate_order_scope(const history& h) {
    const history_facts facts(h);
    const auto deferred = deferred_aggregates(facts);
    std::map<std::pair<std::string, std::string>, bool> out;
    for (const auto& e : h) {
        if (const auto* a = std::get_if<effect_applied>(&e.what); a && !a->aggregate.empty()) {
            const std::pair<std::string, std::string> key{a->consumer, a->aggregate};
            out.emplace(key, !deferred.contains(key));
        }
    }
    return out;
}

} // namespace detail

/// I-06 per-aggregate order: each consumer applies the effects of one aggregate in sequence
/// order. When a consumer applies the row of sequence `s`, every committed row of the same
/// aggregate with a smaller sequence must already be *settled* for that consumer: applied by
/// it, or dead-lettered with a reason (by it, or before any consumer).
///
/// Gaps are allowed when they are dead letters: a dead-lettered message is skipped, and the
/// aggregate goes on without it (its dead letter must come first, though). Rows with an empty
/// aggregate are ordered by nothing.
///
/// Order is promised only while nothing of the aggregate falls behind: an aggregate with a
/// `delivery_deferred` event of a consumer (a message of it retried, held back after a store
/// failure, forwarded to a retry or dead-letter queue) is not checked for that consumer, from
/// the start of the history to its end. The other aggregates of that consumer, and that
/// aggregate for the other consumers, still are. Which rows exist comes from the
/// `transaction_committed` events; the aggregate and sequence of an effect come from the
/// `effect_applied` event.
///
/// One violation per (consumer, earlier row) that was overtaken, citing the effect that
/// overtook it, the earlier row's commit, and what became of it later (applied late,
/// dead-lettered late, or never settled). A lost row is thus reported here once, as a skip, and
/// by `check_no_loss` as a loss.
inline std::vector<invariant_violation> check_aggregate_order(const history& h) {
    const detail::history_facts facts(h);
    const auto deferred = detail::deferred_aggregates(facts);

    // The committed rows of each aggregate, by sequence.
    std::map<std::string, std::vector<outbox_row>> rows_of;
    for (const auto& committed : facts.committed()) {
        if (!committed.row.aggregate.empty()) {
            rows_of[committed.row.aggregate].push_back(committed.row);
        }
    }
    for (auto& [aggregate, rows] : rows_of) {
        std::stable_sort(rows.begin(), rows.end(),
                         [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
    }

    // Walking the history in order: what is settled so far, per consumer and for everyone,
    // and per (consumer, aggregate) how many leading rows are settled or already reported.
    std::map<std::string, std::set<message_id>> settled;
    std::set<message_id> dead_for_all;
    std::map<std::pair<std::string, std::string>, std::size_t> frontier;

    std::vector<invariant_violation> out;
    for (std::size_t i = 0; i < h.size(); ++i) {
        if (const auto* dead = std::get_if<dead_lettered>(&h[i].what)) {
            if (!dead->reason.empty()) {
                (dead->consumer.empty() ? dead_for_all : settled[dead->consumer]).insert(dead->id);
            }
            continue;
        }
        const auto* effect = std::get_if<effect_applied>(&h[i].what);
        if (effect == nullptr) {
            continue;
        }
        const auto rows = rows_of.find(effect->aggregate);
        if (!effect->aggregate.empty() && rows != rows_of.end() &&
            !deferred.contains({effect->consumer, effect->aggregate})) {
            auto& next = frontier[{effect->consumer, effect->aggregate}];
            const auto& done = settled[effect->consumer];
            for (; next < rows->second.size() && rows->second[next].sequence < effect->sequence;
                 ++next) {
                const auto& earlier = rows->second[next];
                if (done.contains(earlier.id) || dead_for_all.contains(earlier.id)) {
                    continue;
                }
                invariant_violation v{invariant::aggregate_order, effect->id,    effect->consumer,
                                      effect->aggregate,          std::string{}, {}};
                v.explanation = "consumer " + detail::quote_text(effect->consumer) +
                                " applied sequence " + std::to_string(effect->sequence) +
                                " of aggregate " + detail::quote_text(effect->aggregate) +
                                " before sequence " + std::to_string(earlier.sequence) + " (" +
                                detail::id_text(earlier.id) + ") was applied or dead-lettered";
                detail::cite(v, facts, i, "applied");
                if (const auto* c = facts.find_committed(earlier.id)) {
                    detail::cite(v, facts, c->event, "earlier row committed");
                }
                if (const auto later = facts.settled_at(effect->consumer, earlier.id)) {
                    detail::cite(v, facts, *later, "settled late");
                } else {
                    v.explanation += "\n  the earlier row was never applied or dead-lettered";
                }
                out.push_back(std::move(v)); // and move past it: report each skipped row once
            }
        }
        settled[effect->consumer].insert(effect->id);
    }
    return out;
}

} // namespace letterbox::testing
