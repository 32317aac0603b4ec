// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/check_aggregate_order.hpp>
#include <letterbox/testing/check_bounded_redelivery.hpp>
#include <letterbox/testing/check_convergence.hpp>
#include <letterbox/testing/check_determinism.hpp>
#include <letterbox/testing/check_no_duplicate_effect.hpp>
#include <letterbox/testing/check_no_loss.hpp>
#include <letterbox/testing/check_no_phantom.hpp>
#include <letterbox/testing/check_poison_isolation.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/history_expectations.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include <iterator>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Runs every history checker on one run and returns all their violations, grouped by
/// invariant in the order of `invariant`: no loss, no phantom, no duplicate effect,
/// per-aggregate order, bounded redelivery (when `expect.max_deliveries` is set), poison
/// isolation, convergence (when `expect.settle_within` is set). Empty means the run kept
/// every invariant.
///
/// Example:
///
///     const auto violations = check_all(h, {.consumers = {"billing"}, .max_deliveries = 5});
///     for (const auto& v : violations)
///         std::cout << v << '\n';
inline std::vector<invariant_violation> check_all(const history& h,
                                                  const history_expectations& expect) {
    std::vector<invariant_violation> out;
    const auto add = [&out](std::vector<invariant_violation> found) {
        out.insert(out.end(), std::make_move_iterator(found.begin()),
                   std::make_move_iterator(found.end()));
    };
    add(check_no_loss(h, expect.consumers));
    add(check_no_phantom(h));
    add(check_no_duplicate_effect(h));
    add(check_aggregate_order(h));
    if (expect.max_deliveries) {
        add(check_bounded_redelivery(h, *expect.max_deliveries));
    }
    add(check_poison_isolation(h, expect.consumers));
    if (expect.settle_within) {
        add(check_convergence(h, expect.consumers, *expect.settle_within));
    }
    return out;
}

/// The same for a run and its replay with the same seed: every checker on `run`, then
/// `check_determinism(run, replay)`.
inline std::vector<invariant_violation> check_all(const history& run, const history& replay,
                                                  const history_expectations& expect) {
    auto out = check_all(run, expect);
    auto determinism = check_determinism(run, replay);
    out.insert(out.end(), std::make_move_iterator(determinism.begin()),
               std::make_move_iterator(determinism.end()));
    return out;
}

} // namespace letterbox::testing
