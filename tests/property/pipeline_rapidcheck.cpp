// SPDX-License-Identifier: BSL-1.0
// RapidCheck over the simulation: fault schedules are generated and, on failure, shrunk to the
// few commands that matter. The correct pipeline must hold for every generated schedule; a
// broken one must be caught and shrunk to a schedule small enough to read.

#include <letterbox/sqlite.hpp>
#include <letterbox/testing/fault_profile.hpp>
#include <letterbox/testing/rapidcheck.hpp>
#include <letterbox/testing/run_pipeline.hpp>

#include "support/ledger_app.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>

namespace property_pipeline_rapidcheck {

namespace {

using letterbox::testing::fault_schedule;

letterbox::testing::pipeline_options scheduled(const fault_schedule& s,
                                               letterbox::testing::pipeline_defect defect = {}) {
    letterbox::testing::pipeline_options o;
    o.faults = letterbox::testing::fault_profile::none();
    o.schedule = s;
    o.defect = defect;
    return o;
}

} // namespace

TEST_CASE("rapidcheck: the pipeline keeps every guarantee under generated fault schedules",
          "[property][simulation][rapidcheck]") {
    rc::prop("no violation", [](const fault_schedule& s) {
        const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1000);
        const auto r =
            letterbox::testing::run_pipeline<test_support::ledger_app>(seed, scheduled(s));
        RC_LOG() << r.to_string();
        RC_ASSERT(r.ok());
    });
}

TEST_CASE("rapidcheck: a relay that marks before the confirm is shrunk to a one-command schedule",
          "[property][simulation][rapidcheck][self_test]") {
    // The last failing schedule RapidCheck tries is the smallest it found.
    std::optional<fault_schedule> smallest;
    const bool held = rc::check(
        "a relay marking before the confirm loses nothing", [&smallest](const fault_schedule& s) {
            const auto r = letterbox::testing::run_pipeline<test_support::ledger_app>(
                7, scheduled(s, letterbox::testing::pipeline_defect::mark_before_confirm));
            if (!r.ok())
                smallest = s;
            RC_ASSERT(r.ok());
        });
    REQUIRE_FALSE(held);
    REQUIRE(smallest.has_value());
    std::cout << "rapidcheck shrank the failing schedule to:\n" << smallest->to_string();
    CHECK(smallest->commands.size() == 1);
    // One refused publish (a nack), or one unroutable one (bindings removed, queues deleted):
    // the relay marked the row at the send, and the broker never took the message.
    const auto kind = smallest->commands.front().kind;
    const std::string kind_name(letterbox::testing::to_string(kind));
    CAPTURE(kind_name);
    CHECK((kind == letterbox::testing::fault_kind::publish_nack ||
           kind == letterbox::testing::fault_kind::binding_removed ||
           kind == letterbox::testing::fault_kind::queue_deleted));
}

} // namespace property_pipeline_rapidcheck
