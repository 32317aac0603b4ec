// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/run_saga_simulation.hpp>
#include <letterbox/testing/saga_simulation_options.hpp>
#include <letterbox/testing/saga_simulation_report.hpp>
#include <letterbox/testing/seed.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// The environment variable that makes `check_saga_simulation` run one run seed only (the one
/// a failure report names), instead of its whole batch.
inline constexpr const char* saga_seed_environment_variable = "LETTERBOX_SAGA_SEED";

/// How many seeds `check_saga_simulation` runs, and how.
struct saga_check_options {
    /// Runs. Run `i` uses the seed `derive_seed(root_seed, "saga/<i>")`.
    std::size_t seeds = 2000;
    /// Index of the first run: a batch can be split into shards.
    std::size_t first = 0;
    /// The root of the run seeds; by default the test process's (`LETTERBOX_SEED`).
    std::uint64_t root_seed = test_seed();
    /// Runs every seed twice and compares the histories' hashes (determinism).
    bool replay = true;
    /// Failing runs kept in the report in full.
    std::size_t keep_failures = 3;
    /// Stops after this many failing runs (the self-test needs only one).
    std::optional<std::size_t> stop_after_failures{};
};

/// The seed of run `index` of a batch rooted at `root`.
inline std::uint64_t saga_run_seed(std::uint64_t root, std::size_t index) {
    return derive_seed(root, "saga/" + std::to_string(index));
}

/// Runs `run_saga_simulation` for many seeds and sums up what the checks found: the property
/// "for every fault schedule, every saga ends completed, or failed with each step it did
/// undone exactly once, in reverse order; nothing is undone that was not done; no step happens
/// twice; no timeout fires out of turn".
///
/// When `LETTERBOX_SAGA_SEED` is set (to a seed a report printed), only that run is made, so
/// that a failure replays alone.
///
/// Example (Catch2):
///
///     TEST_CASE("sagas keep their guarantees under every fault schedule") {
///         const auto report = letterbox::testing::check_saga_simulation();
///         INFO(report.to_string());
///         REQUIRE(report.ok());
///     }
inline saga_simulation_report check_saga_simulation(const saga_simulation_options& options = {},
                                                    const saga_check_options& check = {}) {
    saga_simulation_report report;
    report.root_seed = check.root_seed;
    std::optional<std::uint64_t> only;
    if (const char* text = std::getenv(saga_seed_environment_variable))
        only = parse_seed(text);
    const std::size_t count = only ? 1 : check.seeds;
    for (std::size_t i = 0; i < count; ++i) {
        const auto seed = only ? *only : saga_run_seed(check.root_seed, check.first + i);
        auto result = run_saga_simulation(seed, options);
        if (check.replay) {
            ++report.replays;
            result.deterministic =
                run_saga_simulation(seed, options).trace_hash() == result.trace_hash();
            if (!result.deterministic)
                ++report.determinism_failures;
        }
        report.add(result, check.keep_failures);
        if (check.stop_after_failures && report.failed_runs >= *check.stop_after_failures)
            break;
    }
    return report;
}

} // namespace letterbox::testing
