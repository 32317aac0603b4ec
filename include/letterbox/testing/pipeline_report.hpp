// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/pipeline_counts.hpp>
#include <letterbox/testing/invariant.hpp>
#include <letterbox/testing/pipeline_result.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What `check_pipeline` found over many seeds: violation counts per invariant, totals of what
/// the runs did, and the first failing runs in full (seed, fault profile, violations, history).
/// The totals of the runs' counts (`committed`, `rolled_back`, `effects`, `dead_letters`,
/// `deliveries`, `faults_injected`) are the fields of its base, shared with `pipeline_result`.
struct pipeline_report : detail::pipeline_counts {
    /// The root seed the run seeds were derived from (`LETTERBOX_SEED`).
    std::uint64_t root_seed = 0;
    std::size_t runs = 0;
    std::size_t failed_runs = 0;
    /// Runs replayed with the same seed, and how many gave a different trace.
    std::size_t replays = 0;
    std::size_t determinism_failures = 0;
    /// Violations per invariant, indexed by `invariant`'s value.
    std::array<std::size_t, 8> violations{};
    /// Runs in which per-aggregate order was checked (for at least one aggregate), and over
    /// all runs, the (consumer, aggregate) pairs it could be checked for and was checked for
    /// (`pipeline_result::order_aggregates`, `order_checked_aggregates`).
    std::size_t order_checked_runs = 0;
    std::size_t order_aggregates = 0;
    std::size_t order_checked_aggregates = 0;

    std::size_t crashes = 0;
    /// Runs whose consumers committed deliveries in groups (`pipeline_result::group_commit`).
    std::size_t group_commit_runs = 0;
    /// Runs whose consumers ran message groups (`pipeline_result::message_groups`), and over
    /// them, the (consumer, aggregate) pairs whose order was checked: all of them.
    std::size_t message_groups_runs = 0;
    std::size_t message_groups_checked_aggregates = 0;
    /// Runs (replays included) slower in real time than
    /// `pipeline_check_options::warn_slower_than`: each was named on its log as it ended.
    std::size_t slow_runs = 0;

    /// The first failing runs (at most `pipeline_check_options::keep_failures`).
    std::vector<pipeline_result> failures;

    bool ok() const noexcept { return failed_runs == 0; }
    std::size_t count(invariant which) const noexcept {
        return violations[static_cast<std::size_t>(which)];
    }

    /// Adds one run.
    void add(const pipeline_result& r, std::size_t keep_failures) {
        ++runs;
        for (const auto& v : r.violations)
            ++violations[static_cast<std::size_t>(v.which)];
        if (r.order_checked)
            ++order_checked_runs;
        order_aggregates += r.order_aggregates;
        order_checked_aggregates += r.order_checked_aggregates;
        add_counts(r);
        crashes += r.crashes;
        if (r.group_commit > 1)
            ++group_commit_runs;
        if (r.message_groups) {
            ++message_groups_runs;
            message_groups_checked_aggregates += r.order_checked_aggregates;
        }
        if (!r.ok()) {
            ++failed_runs;
            if (failures.size() < keep_failures)
                failures.push_back(r);
        }
    }

    /// The summary line ("for 2000 random fault schedules: 0 lost, 0 duplicate effects, ..."),
    /// the totals, then each kept failure in full with the way to replay it.
    std::string to_string() const {
        const auto n = [this](invariant i) {
            return std::to_string(count(i));
        };
        std::string out =
            "for " + std::to_string(runs) +
            " random fault schedules (LETTERBOX_SEED=" + std::to_string(root_seed) +
            "): " + n(invariant::no_loss) + " lost, " + n(invariant::no_duplicate_effect) +
            " duplicate effects, " + n(invariant::no_phantom) + " phantoms, " +
            n(invariant::aggregate_order) + " order violations (order checked in " +
            std::to_string(order_checked_runs) + " runs, for " +
            std::to_string(order_checked_aggregates) + " of " + std::to_string(order_aggregates) +
            " consumer aggregates), " + n(invariant::bounded_redelivery) +
            " unbounded redeliveries, " + n(invariant::poison_isolation) +
            " poison isolation failures, " + n(invariant::convergence) +
            " unsettled; determinism: " + std::to_string(replays - determinism_failures) + " of " +
            std::to_string(replays) + " replays identical\n";
        out += "  totals: " + counts_text() + " crashes=" + std::to_string(crashes) +
               " group_commit_runs=" + std::to_string(group_commit_runs) +
               " message_groups_runs=" + std::to_string(message_groups_runs) +
               " (order checked for " + std::to_string(message_groups_checked_aggregates) +
               " consumer aggregates)\n";
        if (slow_runs > 0)
            out += "  " + std::to_string(slow_runs) +
                   " runs were slow in real time, each named on its log as it ended\n";
        for (const auto& f : failures) {
            out += "--- failing run; replay it alone with LETTERBOX_PIPELINE_SEED=" +
                   std::to_string(f.seed) + " (or run_pipeline<App>(" + std::to_string(f.seed) +
                   "))\n";
            out += f.to_string();
        }
        return out;
    }
};

} // namespace letterbox::testing
