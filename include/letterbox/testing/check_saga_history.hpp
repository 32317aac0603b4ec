// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/saga_history_event.hpp>
#include <letterbox/testing/saga_invariant.hpp>
#include <letterbox/testing/saga_violation.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What `check_saga_history` needs to know of the saga definition.
struct saga_expectations {
    /// The steps' names, in the definition's order.
    std::vector<std::string> steps{};
    /// The steps that have no compensation (a check, a read): done, they stay done.
    std::vector<std::string> without_compensation{};
    /// The steps' timeout, checked against the moves that a step's timeout made (0: not
    /// checked).
    std::chrono::nanoseconds step_timeout{0};
};

/// Checks the saga invariants (`saga_invariant`, S-01 to S-04) over a history of sagas,
/// each saga on its own, and returns what is violated (empty when every guarantee held).
/// A saga is one that the history shows started (a `moved` event from no state).
///
/// Example:
///
///     const auto violations = letterbox::testing::check_saga_history(
///         result.events, {.steps = {"reserve-stock", "charge-payment"}});
///     for (const auto& v : violations)
///         std::cout << v << '\n'; // S-01 outcome: saga order-3 ended failed, but ...
inline std::vector<saga_violation> check_saga_history(const std::vector<saga_history_event>& h,
                                                      const saga_expectations& expect) {
    using kind = saga_history_event::kind;
    const auto quote = [&h](std::size_t i) {
        return "#" + std::to_string(i) + ' ' + to_string(h[i]);
    };
    const auto position = [&expect](const std::string& step) {
        return static_cast<std::size_t>(std::find(expect.steps.begin(), expect.steps.end(), step) -
                                        expect.steps.begin());
    };
    const auto compensable = [&expect](const std::string& step) {
        return std::find(expect.without_compensation.begin(), expect.without_compensation.end(),
                         step) == expect.without_compensation.end();
    };

    std::map<std::string, std::vector<std::size_t>> by_saga;
    for (std::size_t i = 0; i < h.size(); ++i)
        if (h[i].what != kind::fault)
            by_saga[h[i].saga].push_back(i);

    std::vector<saga_violation> found;
    for (const auto& entry : by_saga) {
        const auto& saga = entry.first; // not a structured binding: lambdas below capture it
        const auto& events = entry.second;
        std::vector<saga_violation> local;
        const auto violate = [&](saga_invariant which, std::string text,
                                 std::vector<std::size_t> cited) {
            for (const auto i : cited)
                text += "\n  " + quote(i);
            local.push_back({which, saga, std::move(text), std::move(cited)});
        };
        std::map<std::string, std::vector<std::size_t>> applied;
        std::map<std::string, std::vector<std::size_t>> undone;
        std::vector<std::size_t> undo_order;
        std::map<std::string, std::size_t> entered; // state -> the move that entered it
        std::map<std::string, std::size_t> left;    // state -> the reply that moved it on
        bool started = false;
        std::size_t last_move = h.size();

        for (const auto i : events) {
            const auto& e = h[i];
            if (e.what == kind::applied) {
                applied[e.step].push_back(i);
            } else if (e.what == kind::undone) {
                undone[e.step].push_back(i);
                undo_order.push_back(i);
                if (applied.find(e.step) == applied.end())
                    violate(saga_invariant::no_phantom_compensation,
                            "saga " + saga + ": step '" + e.step +
                                "' was undone, but it had not happened",
                            {i});
            } else if (e.what == kind::moved) {
                started = started || e.from.empty();
                last_move = i;
                if (e.cause.starts_with("timeout ")) {
                    // A step's timeout belongs to a step waiting for its reply; a compensation's
                    // and a retry's to a compensation. Only a step's and a compensation's have
                    // a due time the history can check (the retry's comes from the policy).
                    const auto name = e.cause.substr(8);
                    const bool compensating = e.from.starts_with("compensating:");
                    const auto in = entered.find(e.from);
                    const auto replied = left.find(e.from);
                    if (replied != left.end())
                        violate(saga_invariant::no_stray_timeout,
                                "saga " + saga + ": a timeout moved it from '" + e.from +
                                    "' after a reply had ended that state",
                                {replied->second, i});
                    else if (in == entered.end() || (name == "step") == compensating)
                        violate(saga_invariant::no_stray_timeout,
                                "saga " + saga + ": a " + name + " timeout moved it from '" +
                                    e.from + "', a state that timeout does not belong to",
                                {i});
                    else if (name != "retry" && expect.step_timeout.count() > 0 &&
                             e.at - h[in->second].at < expect.step_timeout)
                        violate(saga_invariant::no_stray_timeout,
                                "saga " + saga + ": the " + name + " timeout of '" + e.from +
                                    "' fired before it was due",
                                {in->second, i});
                } else if (e.cause.starts_with("reply ") && e.from != e.to) {
                    left.emplace(e.from, i); // a compensation's failure reply stays: not this
                }
                entered[e.to] = i;
            }
        }
        if (!started)
            continue; // events of a saga the history does not show starting: not ours to judge

        for (const auto& [step, at] : applied)
            if (at.size() > 1)
                violate(saga_invariant::no_duplicate_step,
                        "saga " + saga + ": step '" + step + "' happened " +
                            std::to_string(at.size()) + " times",
                        at);

        const auto& final_state = h[last_move].to;
        if (final_state == "completed") {
            for (const auto& step : expect.steps)
                if (applied[step].empty())
                    violate(saga_invariant::outcome,
                            "saga " + saga + " completed, but step '" + step + "' never happened",
                            {last_move});
            for (const auto& [step, at] : undone)
                if (!at.empty())
                    violate(saga_invariant::outcome,
                            "saga " + saga + " completed, but step '" + step + "' was undone", at);
        } else if (final_state == "failed") {
            for (const auto& [step, at] : applied) {
                const auto& u = undone[step];
                if (at.empty() || !compensable(step) || u.size() == 1)
                    continue;
                auto cited = at;
                cited.insert(cited.end(), u.begin(), u.end());
                cited.push_back(last_move);
                violate(saga_invariant::outcome,
                        "saga " + saga + " failed, but step '" + step + "', which happened, was " +
                            (u.empty() ? std::string("never compensated")
                                       : "compensated " + std::to_string(u.size()) + " times"),
                        cited);
            }
            for (std::size_t k = 1; k < undo_order.size(); ++k)
                if (position(h[undo_order[k]].step) >= position(h[undo_order[k - 1]].step) &&
                    h[undo_order[k]].step != h[undo_order[k - 1]].step)
                    violate(saga_invariant::outcome,
                            "saga " + saga + ": its steps were not compensated in reverse order",
                            {undo_order[k - 1], undo_order[k]});
        } else {
            violate(saga_invariant::outcome,
                    "saga " + saga + " ended in '" + final_state +
                        "', neither completed nor failed",
                    {last_move});
        }
        found.insert(found.end(), local.begin(), local.end());
    }
    return found;
}

} // namespace letterbox::testing
