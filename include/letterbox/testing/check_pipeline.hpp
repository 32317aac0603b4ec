// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/check_determinism.hpp>
#include <letterbox/testing/pipeline_application.hpp>
#include <letterbox/testing/pipeline_options.hpp>
#include <letterbox/testing/pipeline_report.hpp>
#include <letterbox/testing/run_pipeline.hpp>
#include <letterbox/testing/seed.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// The environment variable that makes `check_pipeline` run one run seed only (the one a
/// failure report names), instead of its whole batch.
inline constexpr const char* pipeline_seed_environment_variable = "LETTERBOX_PIPELINE_SEED";

/// How many seeds `check_pipeline` runs, and how.
struct pipeline_check_options {
    /// Runs (fault schedules). Run `i` uses the seed `derive_seed(root_seed, "pipeline/<i>")`.
    std::size_t seeds = 2000;
    /// Index of the first run: a batch can be split into shards.
    std::size_t first = 0;
    /// The root of the run seeds; by default the test process's (`LETTERBOX_SEED`).
    std::uint64_t root_seed = test_seed();
    /// Runs every seed twice and compares the trace hashes (determinism, I-21).
    bool replay = true;
    /// Failing runs kept in the report in full.
    std::size_t keep_failures = 3;
    /// Stops after this many failing runs (the self-test needs only one).
    std::optional<std::size_t> stop_after_failures{};
    /// A run that takes longer than this in real time is named on `slow_run_log` as soon as it
    /// ends, with the way to replay it. A simulated run waits for nothing real (its clock is
    /// virtual), so a slow one was blocked: by an SQLite lock held on its own thread, say, which
    /// the busy handler waits out for seconds. Named as it happens, it is found even when the
    /// test is then killed for its time. `milliseconds::max()` turns it off.
    std::chrono::milliseconds warn_slower_than{std::chrono::seconds(5)};
    /// Where slow runs are named (standard error by default).
    std::ostream* slow_run_log = &std::cerr;
};

/// The seed of run `index` of a batch rooted at `root`.
inline std::uint64_t pipeline_run_seed(std::uint64_t root, std::size_t index) {
    return derive_seed(root, "pipeline/" + std::to_string(index));
}

/// Runs `run_pipeline<App>` for many seeds and sums up what the checkers found: the property
/// "for every fault schedule, nothing is lost and no effect happens twice" tested on the
/// application's own handler and store.
///
/// When `LETTERBOX_PIPELINE_SEED` is set (to a seed a report printed), only that run is made,
/// so a failure replays in isolation.
///
/// Example (Catch2):
///
///     TEST_CASE("crediting a wallet survives every fault schedule") {
///         const auto report = letterbox::testing::check_pipeline<wallet_app>();
///         INFO(report.to_string());
///         REQUIRE(report.ok());
///     }
template <pipeline_application App>
pipeline_report check_pipeline(const pipeline_options& options = {},
                               const pipeline_check_options& check = {}) {
    pipeline_report report;
    report.root_seed = check.root_seed;
    std::optional<std::uint64_t> only;
    if (const char* text = std::getenv(pipeline_seed_environment_variable))
        only = parse_seed(text);
    const std::size_t count = only ? 1 : check.seeds;
    const auto timed_run = [&](std::uint64_t seed) {
        const auto started = std::chrono::steady_clock::now();
        auto r = run_pipeline<App>(seed, options);
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - started);
        if (took > check.warn_slower_than) {
            ++report.slow_runs;
            if (check.slow_run_log != nullptr)
                *check.slow_run_log
                    << "letterbox::testing: the simulated run of seed " << seed << " took "
                    << took.count()
                    << " ms of real time: something blocked it (a simulated run waits for "
                       "nothing real). Replay it alone with LETTERBOX_PIPELINE_SEED="
                    << seed << std::endl;
        }
        return r;
    };
    for (std::size_t i = 0; i < count; ++i) {
        const auto seed = only ? *only : pipeline_run_seed(check.root_seed, check.first + i);
        auto result = timed_run(seed);
        if (check.replay) {
            const auto again = timed_run(seed);
            ++report.replays;
            auto differences = check_determinism(result.events, again.events);
            if (!differences.empty()) {
                ++report.determinism_failures;
                result.violations.insert(result.violations.end(), differences.begin(),
                                         differences.end());
            }
        }
        report.add(result, check.keep_failures);
        if (check.stop_after_failures && report.failed_runs >= *check.stop_after_failures)
            break;
    }
    return report;
}

} // namespace letterbox::testing
