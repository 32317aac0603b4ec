// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/saga_invariant.hpp>
#include <letterbox/testing/saga_simulation_result.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What `check_saga_simulation` found over many seeds: violations per invariant, totals of
/// what the runs did, and the first failing runs in full.
struct saga_simulation_report {
    /// The root seed the run seeds were derived from (`LETTERBOX_SEED`).
    std::uint64_t root_seed = 0;
    std::size_t runs = 0;
    std::size_t failed_runs = 0;
    /// Runs replayed with the same seed, and how many gave a different history.
    std::size_t replays = 0;
    std::size_t determinism_failures = 0;
    /// Violations per invariant, indexed by `saga_invariant`'s value.
    std::array<std::size_t, 4> violations{};
    /// Totals over the runs.
    std::uint64_t sagas = 0;
    std::uint64_t completed = 0;
    std::uint64_t failed = 0;
    std::uint64_t compensations = 0;
    std::uint64_t timeouts_fired = 0;
    std::uint64_t stale = 0;
    std::size_t crashes = 0;
    std::size_t deliveries = 0;
    /// The first failing runs (at most `saga_check_options::keep_failures`).
    std::vector<saga_simulation_result> failures;

    bool ok() const noexcept { return failed_runs == 0; }
    std::size_t count(saga_invariant which) const noexcept {
        return violations[static_cast<std::size_t>(which)];
    }

    /// Adds one run.
    void add(const saga_simulation_result& r, std::size_t keep_failures) {
        ++runs;
        for (const auto& v : r.violations)
            ++violations[static_cast<std::size_t>(v.which)];
        sagas += r.stats.started;
        completed += r.stats.completed;
        failed += r.stats.failed;
        compensations += r.stats.compensations;
        timeouts_fired += r.stats.timeouts_fired;
        stale += r.stats.stale;
        crashes += r.crashes;
        deliveries += r.deliveries;
        if (!r.ok()) {
            ++failed_runs;
            if (failures.size() < keep_failures)
                failures.push_back(r);
        }
    }

    /// The summary line, the totals, then each kept failure in full with the way to replay it.
    std::string to_string() const {
        const auto n = [this](saga_invariant i) {
            return std::to_string(count(i));
        };
        std::string out =
            "for " + std::to_string(runs) +
            " random saga fault schedules (LETTERBOX_SEED=" + std::to_string(root_seed) +
            "): " + n(saga_invariant::outcome) + " wrong outcomes, " +
            n(saga_invariant::no_phantom_compensation) + " phantom compensations, " +
            n(saga_invariant::no_duplicate_step) + " duplicate steps, " +
            n(saga_invariant::no_stray_timeout) +
            " stray timeouts; determinism: " + std::to_string(replays - determinism_failures) +
            " of " + std::to_string(replays) + " replays identical\n";
        out += "  totals: sagas=" + std::to_string(sagas) +
               " completed=" + std::to_string(completed) + " failed=" + std::to_string(failed) +
               " compensations=" + std::to_string(compensations) +
               " timeouts_fired=" + std::to_string(timeouts_fired) +
               " stale=" + std::to_string(stale) + " crashes=" + std::to_string(crashes) +
               " deliveries=" + std::to_string(deliveries) + '\n';
        for (const auto& f : failures) {
            out += "--- failing run; replay it alone with LETTERBOX_SAGA_SEED=" +
                   std::to_string(f.seed) + " (or run_saga_simulation(" + std::to_string(f.seed) +
                   "))\n";
            out += f.to_string();
        }
        return out;
    }
};

} // namespace letterbox::testing
