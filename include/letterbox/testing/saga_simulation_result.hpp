// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/saga/saga_stats.hpp>
#include <letterbox/testing/detail/history_text.hpp>
#include <letterbox/testing/saga_defect.hpp>
#include <letterbox/testing/saga_fault_profile.hpp>
#include <letterbox/testing/saga_history_event.hpp>
#include <letterbox/testing/saga_violation.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What one simulated saga run (`run_saga_simulation`) did, and what `check_saga_history`
/// found in it.
struct saga_simulation_result {
    /// The run's seed: `run_saga_simulation(seed, options)` replays it event for event.
    std::uint64_t seed = 0;
    /// The faults it ran under, and the saga's steps (drawn from the seed unless the options
    /// fixed them).
    saga_fault_profile faults{};
    std::size_t steps = 0;
    saga_defect defect = saga_defect::none;
    /// Everything that happened, in order.
    std::vector<saga_history_event> events{};
    /// What the checks found; empty when every saga kept every guarantee.
    std::vector<saga_violation> violations{};
    /// The orchestrator's counts.
    saga_stats stats{};
    /// Crashes injected (participants' and the orchestrator's), and deliveries handled.
    std::size_t crashes = 0;
    std::size_t deliveries = 0;
    /// Whether every saga ended within `saga_simulation_options::settle_within`.
    bool settled = false;
    /// False when a replay of the seed gave another history (`check_saga_simulation`).
    bool deterministic = true;

    bool ok() const noexcept { return violations.empty() && deterministic; }

    /// The 64-bit FNV-1a hash of the history's text: the same seed gives the same hash.
    std::uint64_t trace_hash() const {
        auto hash = detail::fnv1a_offset_basis;
        for (const auto& e : events) {
            hash = detail::fnv1a(hash, letterbox::testing::to_string(e));
            hash = detail::fnv1a(hash, "\n");
        }
        return hash;
    }

    /// A report: the seed, the counts, the fault profile, each violation, and, for a failed
    /// run, the history.
    std::string to_string() const {
        std::string out = "seed " + std::to_string(seed) + (ok() ? ": ok" : ": FAILED") + '\n';
        out += "  steps=" + std::to_string(steps) + " started=" + std::to_string(stats.started) +
               " completed=" + std::to_string(stats.completed) +
               " failed=" + std::to_string(stats.failed) +
               " compensation_failed=" + std::to_string(stats.compensation_failed) +
               " compensations=" + std::to_string(stats.compensations) +
               " timeouts_fired=" + std::to_string(stats.timeouts_fired) +
               " stale=" + std::to_string(stats.stale) + " crashes=" + std::to_string(crashes) +
               " deliveries=" + std::to_string(deliveries) +
               " settled=" + (settled ? "true" : "false") +
               (deterministic ? "" : " (a replay of this seed gave another history)") + '\n';
        if (defect != saga_defect::none)
            out += "  defect=" + std::string(letterbox::testing::to_string(defect)) + '\n';
        out += "fault profile:\n" + faults.to_string();
        for (const auto& v : violations)
            out += "violation: " + letterbox::testing::to_string(v) + '\n';
        if (!ok())
            for (std::size_t i = 0; i < events.size(); ++i)
                out +=
                    '#' + std::to_string(i) + ' ' + letterbox::testing::to_string(events[i]) + '\n';
        return out;
    }
};

} // namespace letterbox::testing
