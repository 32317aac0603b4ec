// SPDX-License-Identifier: BSL-1.0
// Fault schedules kept as regression tests: each one once showed a bug (or is the smallest
// schedule that shows a self-test defect), in the text form a failing run prints
// ("fault schedule (...)") and RapidCheck shrinks to. Paste a new one here with its story.

#include <letterbox/sqlite.hpp>
#include <letterbox/testing/fault_profile.hpp>
#include <letterbox/testing/fault_schedule.hpp>
#include <letterbox/testing/pipeline_topology.hpp>
#include <letterbox/testing/run_pipeline.hpp>

#include "support/ledger_app.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace property_pipeline_regressions {

namespace {

letterbox::testing::pipeline_result
replay(std::uint64_t seed, std::string_view schedule, letterbox::testing::fault_profile faults = {},
       letterbox::testing::pipeline_defect defect = {},
       letterbox::testing::pipeline_topology topology = letterbox::testing::pipeline_topology{}) {
    const auto parsed = letterbox::testing::fault_schedule::parse(schedule);
    REQUIRE(parsed.has_value());
    letterbox::testing::pipeline_options o;
    o.faults = faults;
    o.schedule = *parsed;
    o.defect = defect;
    o.topology = std::move(topology);
    o.group_commit = 0;       // found before group commit: one commit per delivery, as then
    o.message_groups = false; // and before message groups
    return letterbox::testing::run_pipeline<test_support::ledger_app>(seed, o);
}

/// What a kept run did when it was found: replaying it must do the same, so that it still
/// tells its story.
struct found_run_counts {
    std::size_t dead_letters = 0;
    std::size_t deliveries = 0;
};

/// Replays a whole run that a tier once printed as failing (its pipeline seed, the default
/// options of then): it keeps every guarantee now, and still does what it did. The runs found
/// before the fan-outs and the unroutable faults existed had one consumer process and none of
/// those faults: their seeds draw them now, so they are switched off to replay the same run.
void replay_found_run(std::uint64_t pipeline_seed, found_run_counts expected) {
    letterbox::testing::pipeline_options o;
    auto faults = letterbox::testing::fault_profile::from_seed(pipeline_seed);
    faults.binding_removals = 0;
    faults.queue_deletions = 0;
    o.faults = faults;
    o.topology = letterbox::testing::pipeline_topology::single();
    o.group_commit = 0;
    o.message_groups = false;
    const auto r = letterbox::testing::run_pipeline<test_support::ledger_app>(pipeline_seed, o);
    INFO(r.to_string());
    CHECK(r.ok());
    CHECK(r.dead_letters == expected.dead_letters);
    CHECK(r.deliveries == expected.deliveries);
}

} // namespace

TEST_CASE("regression: a store locked for seconds does not spin the consumer in a requeue loop",
          "[property][simulation][regression]") {
    // Found by the PR tier (a poison message delivered while the inbox was locked): the consumer
    // requeued every store failure at once, so the delivery came straight back, 2.5 million
    // times in zero virtual time. It now waits (consumer_options::store_retry_initial, doubling).
    letterbox::testing::fault_profile poison;
    poison.poison_message = true;
    const auto r = replay(1, "@0ms sqlite_busy 3000\n@1500ms sqlite_busy 2000\n", poison);
    INFO(r.to_string());
    CHECK(r.ok());
    CHECK(r.settled);
    CHECK(r.deliveries < 200);
}

TEST_CASE("regression: one refused publish is enough to lose a row marked before its confirm",
          "[property][simulation][regression][self_test]") {
    // The schedule RapidCheck shrinks pipeline_defect::mark_before_confirm's failures to.
    const auto broken = replay(7, "@0ms publish_nack 1\n", {},
                               letterbox::testing::pipeline_defect::mark_before_confirm);
    CHECK_FALSE(broken.ok());
    // The same schedule on the correct relay: the refused publish is retried.
    const auto fixed = replay(7, "@0ms publish_nack 1\n");
    INFO(fixed.to_string());
    CHECK(fixed.ok());
}

TEST_CASE("regression: one binding removal is enough to lose a row whose return counts as a "
          "success",
          "[property][simulation][regression][self_test]") {
    // The smallest schedule for pipeline_defect::return_as_success: for a second the exchange
    // routes nowhere, and every publish meanwhile comes back unroutable.
    const auto broken = replay(7, "@500ms binding_removed 1000\n", {},
                               letterbox::testing::pipeline_defect::return_as_success);
    CHECK_FALSE(broken.ok());
    // The correct relay keeps each returned row, and publishes it again once routed.
    const auto fixed = replay(7, "@500ms binding_removed 1000\n");
    INFO(fixed.to_string());
    CHECK(fixed.ok());
    CHECK(fixed.committed == fixed.effects);
}

TEST_CASE("regression: work queues deleted and restored lose nothing the relay publishes meanwhile",
          "[property][simulation][regression]") {
    // Two consumers, one with two competing processes: both queues go away together (once
    // empty), their consumers are cancelled, and everything published meanwhile comes back
    // unroutable until the queues are declared, bound and consumed again.
    const letterbox::testing::pipeline_topology fan_out{{1, 2}};
    const auto r =
        replay(7, "@500ms queue_deleted 800\n@2000ms queue_deleted 300\n", {}, {}, fan_out);
    INFO(r.to_string());
    CHECK(r.ok());
    CHECK(r.events.text().find("restored: every work queue") != std::string::npos);
    CHECK(r.effects == 2 * r.committed);
    const auto broken = replay(7, "@500ms queue_deleted 800\n@2000ms queue_deleted 300\n", {},
                               letterbox::testing::pipeline_defect::return_as_success, fan_out);
    CHECK_FALSE(broken.ok());
}

TEST_CASE("regression: two consumers of one event on an inbox keyed on the message id alone",
          "[property][simulation][regression][self_test]") {
    // The smallest case for pipeline_defect::inbox_key_without_consumer: no fault at all, two
    // consumers; the second skips every event as the first one's duplicate.
    const letterbox::testing::pipeline_topology two{{1, 1}};
    const auto broken =
        replay(7, "", {}, letterbox::testing::pipeline_defect::inbox_key_without_consumer, two);
    CHECK_FALSE(broken.ok());
    const auto fixed = replay(7, "", {}, {}, two);
    INFO(fixed.to_string());
    CHECK(fixed.ok());
    CHECK(fixed.effects == 2 * fixed.committed);
}

TEST_CASE("regression: copies of a poison message in flight at each drop stay within the bound",
          "[property][simulation][regression]") {
    // Found by CI (PR tier): a poison message had 4 copies (2 relay publishes, 2 injected
    // duplicates), and with prefetch 2 or 3 of them were in flight at each of four drops. Each
    // came back while its retry copy went on, so 16 copies reached the dead-letter queue after
    // 62 deliveries, over a bound that counted one copy per disruption (52).
    replay_found_run(15080384919297221445ULL, {.dead_letters = 16, .deliveries = 90});
}

TEST_CASE("regression: a refused retry copy of a poison message stays within the bound",
          "[property][simulation][regression]") {
    // Found by the extended tier: the consumer's retry copy was refused (publish_nack), so the
    // delivery was requeued and came back without using an attempt: max_attempts + 1
    // deliveries, over a bound that did not count refused publishes.
    replay_found_run(16846503620036634698ULL, {.dead_letters = 1, .deliveries = 26});
}

TEST_CASE("fault_schedule: the text form reads back", "[property][simulation]") {
    constexpr std::string_view text = "@0ms publish_nack 1\n"
                                      "@10ms connection_drop\n"
                                      "@1200ms crash after_confirm_before_mark\n"
                                      "@2500ms sqlite_busy 300\n";
    const auto s = letterbox::testing::fault_schedule::parse(text);
    REQUIRE(s.has_value());
    CHECK(s->commands.size() == 4);
    CHECK(s->to_string() == text);
    CHECK_FALSE(letterbox::testing::fault_schedule::parse("@1ms connection_drop 3\n"));
    CHECK_FALSE(letterbox::testing::fault_schedule::parse("@1ms crash nowhere\n"));
    CHECK_FALSE(letterbox::testing::fault_schedule::parse("1ms publish_nack 1\n"));
    CHECK_FALSE(letterbox::testing::fault_schedule::parse("@1ms poison_message 1\n"));
    CHECK(letterbox::testing::fault_schedule::parse("# a comment\n\n")->commands.empty());
}

} // namespace property_pipeline_regressions
