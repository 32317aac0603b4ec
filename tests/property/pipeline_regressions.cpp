// SPDX-License-Identifier: BSL-1.0
// Fault schedules kept as regression tests: each one once showed a bug (or is the smallest
// schedule that shows a self-test defect), in the text form a failing run prints
// ("fault schedule (...)") and RapidCheck shrinks to. Paste a new one here with its story.

#include <letterbox/sqlite.hpp>
#include <letterbox/testing/fault_profile.hpp>
#include <letterbox/testing/fault_schedule.hpp>
#include <letterbox/testing/run_pipeline.hpp>

#include "support/ledger_app.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string_view>

namespace {

letterbox::testing::pipeline_result replay(std::uint64_t seed, std::string_view schedule,
                                           letterbox::testing::fault_profile faults = {},
                                           letterbox::testing::pipeline_defect defect = {}) {
    const auto parsed = letterbox::testing::fault_schedule::parse(schedule);
    REQUIRE(parsed.has_value());
    letterbox::testing::pipeline_options o;
    o.faults = faults;
    o.schedule = *parsed;
    o.defect = defect;
    return letterbox::testing::run_pipeline<test_support::ledger_app>(seed, o);
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
