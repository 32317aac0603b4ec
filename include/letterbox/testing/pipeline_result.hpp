// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/pipeline_counts.hpp>
#include <letterbox/testing/fault_profile.hpp>
#include <letterbox/testing/fault_schedule.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/invariant_violation.hpp>
#include <letterbox/testing/pipeline_defect.hpp>
#include <letterbox/testing/pipeline_topology.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What one simulated pipeline run (`run_pipeline`) did and what the checkers found. The counts
/// of its history (`committed`, `rolled_back`, `effects`, `dead_letters`, `deliveries`,
/// `faults_injected`) are the fields of its base, shared with `pipeline_report`.
struct pipeline_result : detail::pipeline_counts {
    /// The run's seed: `run_pipeline<App>(seed, options)` replays it event for event.
    std::uint64_t seed = 0;
    /// The faults it ran under (drawn from the seed unless the options fixed them).
    fault_profile faults{};
    /// The timed faults it ran (drawn from `faults` unless the options fixed them).
    fault_schedule schedule{};
    /// The consumers it ran (drawn from the seed unless the options fixed them).
    pipeline_topology topology{};
    /// The group commit of its consumers: deliveries per commit at most, 0 for one commit per
    /// delivery (drawn from the seed unless the options fixed it).
    std::size_t group_commit = 0;
    /// Whether its consumers ran message groups in strict order (drawn from the seed unless the
    /// options fixed it).
    bool message_groups = false;
    pipeline_defect defect = pipeline_defect::none;
    /// Everything that happened, in order.
    history events{};
    /// What the invariant checkers found; empty when the run kept every guarantee.
    std::vector<invariant_violation> violations{};
    /// Whether everything settled before the run gave up.
    bool settled = false;
    /// Whether per-aggregate order was checked for at least one aggregate. It is promised per
    /// consumer and aggregate while no message of that aggregate is retried, held back or
    /// dead-lettered by that consumer, or always with message groups, and only for a consumer
    /// with one process on its queue (see docs/guarantees.md).
    bool order_checked = false;
    /// The (consumer, aggregate) pairs of consumers with one process that applied an effect,
    /// and of those, the pairs whose order was checked (no deferred delivery).
    std::size_t order_aggregates = 0;
    std::size_t order_checked_aggregates = 0;
    /// The bound the bounded-redelivery check used.
    std::uint32_t delivery_bound = 0;

    std::uint32_t crashes = 0;

    bool ok() const noexcept { return violations.empty(); }
    std::uint64_t trace_hash() const { return events.trace_hash(); }

    /// A report: the seed, the counts, the fault profile in full, each violation, and, for a
    /// failed run, the history's text.
    std::string to_string() const {
        std::string out = "seed " + std::to_string(seed) + (ok() ? ": ok" : ": FAILED") + '\n';
        out += "  " + counts_text() + " crashes=" + std::to_string(crashes) +
               " settled=" + (settled ? "true" : "false") + '\n';
        out += "  consumers: " + topology.to_string() + " (order checked for " +
               std::to_string(order_checked_aggregates) + " of " +
               std::to_string(order_aggregates) + " consumer aggregates)";
        out += group_commit > 1 ? ", group commit of up to " + std::to_string(group_commit)
                                : std::string(", one commit per delivery");
        out += message_groups ? ", message groups\n" : "\n";
        if (defect != pipeline_defect::none)
            out += "  defect=" + std::string(letterbox::testing::to_string(defect)) + '\n';
        out += "fault profile:\n" + faults.to_string();
        out += "fault schedule (pipeline_options::schedule = fault_schedule::parse(...)):\n" +
               schedule.to_string();
        for (const auto& v : violations)
            out += "violation: " + letterbox::testing::to_string(v) + '\n';
        if (!ok())
            out += "history:\n" + events.text();
        return out;
    }
};

} // namespace letterbox::testing
