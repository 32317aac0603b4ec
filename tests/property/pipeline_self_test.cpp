// SPDX-License-Identifier: BSL-1.0
// The self-test of the simulation: deliberately broken pipelines must be caught. Each defect
// gives up one step a guarantee rests on; `check_pipeline` must report a violation of that
// guarantee, with the seed that shows it, within the seeds of the PR tier. A checker that
// cannot fail here proves nothing on the correct pipeline either.

#include <letterbox/sqlite.hpp>
#include <letterbox/testing/check_pipeline.hpp>

#include "support/ledger_app.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace {

using letterbox::testing::invariant;
using letterbox::testing::pipeline_defect;

/// Runs the defective pipeline until the first failing seed (at most the PR tier's 2,000), and
/// checks that it broke `expected`.
void expect_caught(pipeline_defect defect, invariant expected) {
    letterbox::testing::pipeline_options options;
    options.defect = defect;
    letterbox::testing::pipeline_check_options check;
    check.seeds = 2000;
    check.replay = false;
    check.keep_failures = 1;
    check.stop_after_failures = 1;
    const auto report =
        letterbox::testing::check_pipeline<test_support::ledger_app>(options, check);
    INFO(report.to_string());
    REQUIRE_FALSE(report.ok());
    REQUIRE(report.failures.size() == 1);
    const auto& failure = report.failures.front();
    std::cout << "self-test: defect " << letterbox::testing::to_string(defect) << " caught after "
              << report.runs << " runs, seed " << failure.seed
              << " (LETTERBOX_PIPELINE_SEED=" << failure.seed
              << "): " << letterbox::testing::to_string(failure.violations.front()) << '\n';
    CHECK(std::any_of(failure.violations.begin(), failure.violations.end(),
                      [&](const auto& v) { return v.which == expected; }));

    // The seed replays the failure on its own.
    const auto replay =
        letterbox::testing::run_pipeline<test_support::ledger_app>(failure.seed, options);
    CHECK_FALSE(replay.ok());
    CHECK(replay.trace_hash() == failure.trace_hash());
}

} // namespace

TEST_CASE("self-test: a relay that marks rows before the confirm is caught losing messages",
          "[property][simulation][self_test]") {
    expect_caught(pipeline_defect::mark_before_confirm, invariant::no_loss);
}

TEST_CASE("self-test: a consumer that acks before its commit is caught losing messages",
          "[property][simulation][self_test]") {
    expect_caught(pipeline_defect::ack_before_commit, invariant::no_loss);
}

TEST_CASE("self-test: an inbox check outside the transaction is caught losing messages",
          "[property][simulation][self_test]") {
    expect_caught(pipeline_defect::inbox_check_outside_transaction, invariant::no_loss);
}
