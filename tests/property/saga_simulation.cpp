// SPDX-License-Identifier: BSL-1.0
// The saga invariants under the deterministic simulation: an orchestrated saga of 2 to 4 steps
// (orchestrator and participants with in-memory outboxes, inboxes and relays on the in-memory
// broker) under 2,000 seeded fault schedules, each run twice: every saga ends completed, or
// failed with each step it did undone exactly once, in reverse order; nothing is undone that
// was not done; no step happens twice; no timeout fires out of turn (S-01 to S-04). Then the
// self-test: each broken participant of `saga_defect` must be caught. LETTERBOX_EXTENDED=1 runs
// 100,000 seeds.

#include <letterbox/testing/check_saga_simulation.hpp>
#include <letterbox/testing/run_saga_simulation.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <string>

namespace property_saga_simulation {

namespace {

namespace lt = letterbox::testing;

bool extended() {
    const char* v = std::getenv("LETTERBOX_EXTENDED");
    return v != nullptr && std::string(v) == "1";
}

/// The run must have exercised what the invariants are about, or their holding says little.
void check_coverage(const lt::saga_simulation_report& report, std::size_t seeds) {
    if (std::getenv(lt::saga_seed_environment_variable) != nullptr)
        return;
    CHECK(report.runs == seeds);
    CHECK(report.replays == seeds);
    CHECK(report.completed > report.sagas / 4);
    CHECK(report.failed > report.sagas / 4);
    CHECK(report.timeouts_fired > 0);
    CHECK(report.stale > 0); // late replies: steps that timed out and happened after all
    CHECK(report.crashes > 0);
}

void expect_caught(lt::saga_defect defect, lt::saga_invariant which) {
    if (std::getenv(lt::saga_seed_environment_variable) != nullptr)
        return; // replaying one seed of the tier: the self-test needs its own seeds
    lt::saga_simulation_options options;
    options.defect = defect;
    lt::saga_check_options check;
    check.seeds = 500;
    check.replay = false;
    check.keep_failures = 1;
    check.stop_after_failures = 1;
    const auto report = lt::check_saga_simulation(options, check);
    INFO(report.to_string());
    REQUIRE_FALSE(report.ok());
    CHECK(report.count(which) > 0);
    // The failing run replays from its seed alone, violation for violation.
    const auto& failure = report.failures.front();
    const auto replay = lt::run_saga_simulation(failure.seed, options);
    CHECK(replay.violations == failure.violations);
    CHECK(replay.trace_hash() == failure.trace_hash());
}

/// Runs shard `shard` of `shards` of the tier: ctest runs the shards in parallel.
void run_shard(std::size_t shard, std::size_t shards) {
    lt::saga_check_options check;
    check.seeds = (extended() ? 100'000 : 2'000) / shards;
    check.first = shard * check.seeds;
    const auto report = lt::check_saga_simulation({}, check);
    std::cout << "saga simulation, shard " << shard + 1 << " of " << shards << ": "
              << report.to_string();
    INFO(report.to_string());
    check_coverage(report, check.seeds);
    REQUIRE(report.ok());
}

} // namespace

TEST_CASE("saga simulation: seeds 1/2 keep S-01 to S-04", "[property][simulation][saga]") {
    run_shard(0, 2);
}
TEST_CASE("saga simulation: seeds 2/2 keep S-01 to S-04", "[property][simulation][saga]") {
    run_shard(1, 2);
}

TEST_CASE("saga simulation: a run replays from its seed, event for event",
          "[property][simulation][saga]") {
    const auto seed = lt::saga_run_seed(lt::test_seed(), 7);
    const auto a = lt::run_saga_simulation(seed);
    const auto b = lt::run_saga_simulation(seed);
    CHECK(a.events == b.events);
    CHECK(a.trace_hash() == b.trace_hash());
    CHECK_FALSE(a.events.empty());
    CHECK(lt::run_saga_simulation(seed + 1).trace_hash() != a.trace_hash());
}

TEST_CASE("saga simulation: without faults, every saga completes and nothing is undone",
          "[property][simulation][saga]") {
    lt::saga_simulation_options options;
    options.faults = lt::saga_fault_profile::none();
    options.steps = 3;
    const auto r = lt::run_saga_simulation(lt::test_seed(), options);
    INFO(r.to_string());
    CHECK(r.ok());
    CHECK(r.settled);
    CHECK(r.stats.completed == options.sagas);
    CHECK(r.stats.compensations == 0);
    CHECK(std::count_if(r.events.begin(), r.events.end(), [](const auto& e) {
              return e.what == lt::saga_history_event::kind::applied;
          }) == static_cast<std::ptrdiff_t>(3 * options.sagas));
}

TEST_CASE("self-test: a compensation committed outside its transaction is caught undoing a "
          "step twice",
          "[property][simulation][saga][self_test]") {
    expect_caught(lt::saga_defect::compensation_outside_transaction, lt::saga_invariant::outcome);
}

TEST_CASE("self-test: a participant that applies a command after its compensation is caught "
          "leaving a step done in a failed saga",
          "[property][simulation][saga][self_test]") {
    expect_caught(lt::saga_defect::late_command_applied, lt::saga_invariant::outcome);
}

TEST_CASE("self-test: a participant that undoes a step it never did is caught",
          "[property][simulation][saga][self_test]") {
    expect_caught(lt::saga_defect::undo_without_check, lt::saga_invariant::no_phantom_compensation);
}

} // namespace property_saga_simulation
