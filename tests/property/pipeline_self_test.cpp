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

namespace property_pipeline_self_test {

namespace {

using letterbox::testing::invariant;
using letterbox::testing::pipeline_defect;

/// Runs the defective pipeline until its fifth failing seed (within the PR tier's 2,000), and
/// checks that one of those runs broke `expected`. Not only the first: a defect can also show
/// first as another violation (a relay that marks rows before the confirm reorders an
/// aggregate when the lost row comes back late), and which one the first failing seed shows
/// depends on LETTERBOX_SEED.
void expect_caught(pipeline_defect defect, invariant expected) {
    letterbox::testing::pipeline_options options;
    options.defect = defect;
    letterbox::testing::pipeline_check_options check;
    check.seeds = 2000;
    check.replay = false;
    check.keep_failures = 5;
    check.stop_after_failures = 5;
    const auto report =
        letterbox::testing::check_pipeline<test_support::ledger_app>(options, check);
    INFO(report.to_string());
    REQUIRE_FALSE(report.ok());
    const auto breaks_expected = [&](const auto& v) {
        return v.which == expected;
    };
    const auto found =
        std::find_if(report.failures.begin(), report.failures.end(), [&](const auto& f) {
            return std::any_of(f.violations.begin(), f.violations.end(), breaks_expected);
        });
    REQUIRE(found != report.failures.end());
    const auto& failure = *found;
    const auto& violation =
        *std::find_if(failure.violations.begin(), failure.violations.end(), breaks_expected);
    std::cout << "self-test: defect " << letterbox::testing::to_string(defect) << " caught in "
              << report.runs << " runs, seed " << failure.seed
              << " (LETTERBOX_PIPELINE_SEED=" << failure.seed
              << "): " << letterbox::testing::to_string(violation) << '\n';

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

TEST_CASE("self-test: a relay that takes a returned (unroutable) publish for a success is caught "
          "losing messages",
          "[property][simulation][self_test]") {
    // Caught only when a publish is unroutable: while the bindings are removed or the queues
    // deleted (fault_kind::binding_removed, queue_deleted).
    expect_caught(pipeline_defect::return_as_success, invariant::no_loss);
}

TEST_CASE("self-test: an inbox keyed on the message id alone is caught losing messages when two "
          "consumers read the same events",
          "[property][simulation][self_test]") {
    // Caught only with a fan-out: the second consumer skips each event as a duplicate of the
    // first one's (pipeline_topology with two consumers or more).
    expect_caught(pipeline_defect::inbox_key_without_consumer, invariant::no_loss);
}

TEST_CASE("self-test: a group commit that acks its batch before the commit is caught losing "
          "messages",
          "[property][simulation][self_test][group_commit]") {
    // Caught when a consumer dies after some messages of a batch were staged and acknowledged,
    // before the batch committed (failpoint::after_effect_before_inbox_commit of a later one).
    expect_caught(pipeline_defect::ack_before_batch_commit, invariant::no_loss);
}

TEST_CASE("self-test: message groups that let a retried message be overtaken are caught breaking "
          "an aggregate's order",
          "[property][simulation][self_test]") {
    // Caught when a message of an aggregate goes to a retry queue while the next one of the
    // same aggregate waits behind it in the consumer (a transient handler failure that the
    // in-process retry does not mend).
    expect_caught(pipeline_defect::groups_let_retries_overtake, invariant::aggregate_order);
}

} // namespace property_pipeline_self_test
