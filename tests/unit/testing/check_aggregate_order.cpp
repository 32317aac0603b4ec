// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_aggregate_order.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace history_test;

TEST_CASE("aggregate-order passes for in-order effects, per consumer and per aggregate",
          "[testing][history][aggregate-order]") {
    script s;
    s.commit(1, "a", 10).commit(2, "b", 11).commit(3, "a", 12).commit(4, "", 13);
    s.effect("c1", 1, "a", 10).effect("c1", 2, "b", 11).effect("c1", 3, "a", 12);
    // Another consumer's order is its own; aggregates interleave freely; "" is unordered.
    s.effect("c2", 4, "", 13).effect("c2", 2, "b", 11).effect("c2", 1, "a", 10);
    s.effect("c2", 3, "a", 12);
    CHECK(check_aggregate_order(s.h).empty());
}

TEST_CASE("aggregate-order lets a dead-lettered message be skipped",
          "[testing][history][aggregate-order]") {
    script s;
    s.commit(1, "a", 1).commit(2, "a", 2).commit(3, "a", 3);
    s.effect("c1", 1, "a", 1).dead_letter("c1", 2, "poison").effect("c1", 3, "a", 3);
    s.dead_letter("", 1, "parked by the relay").effect("c2", 2, "a", 2); // for everyone
    s.effect("c2", 3, "a", 3);
    CHECK(check_aggregate_order(s.h).empty());
}

TEST_CASE("aggregate-order reports an effect that overtakes an earlier one",
          "[testing][history][aggregate-order]") {
    script s;
    s.commit(1, "a", 1).commit(2, "a", 2);
    s.effect("c1", 2, "a", 2);
    const auto overtaking = s.last();
    s.effect("c1", 1, "a", 1);
    const auto late = s.last();

    const auto violations = check_aggregate_order(s.h);
    REQUIRE(violations.size() == 1);
    const auto& v = violations[0];
    CHECK(v.which == invariant::aggregate_order);
    CHECK(v.id == id(2));
    CHECK(v.consumer == "c1");
    CHECK(v.aggregate == "a");
    CHECK(v.events == std::vector<std::size_t>{overtaking, 0, late});
    CHECK_THAT(v.explanation,
               Catch::Contains("applied sequence 2 of aggregate \"a\" before sequence 1") &&
                   Catch::Contains("settled late: #" + std::to_string(late)));
}

TEST_CASE("aggregate-order reports a skipped message once, and a late dead letter too",
          "[testing][history][aggregate-order]") {
    script s;
    s.commit(1, "a", 1).commit(2, "a", 2).commit(3, "a", 3).commit(4, "a", 4);
    s.effect("c1", 2, "a", 2).effect("c1", 3, "a", 3); // 1 is never settled
    s.effect("c1", 4, "a", 4);
    s.effect("c2", 2, "a", 2).dead_letter("c2", 1, "too late"); // dead-lettered after 2
    const auto violations = check_aggregate_order(s.h);
    REQUIRE(violations.size() == 2);
    CHECK(violations[0].consumer == "c1");
    CHECK(violations[0].id == id(2));
    CHECK_THAT(violations[0].explanation,
               Catch::Contains("the earlier row was never applied or dead-lettered"));
    CHECK(violations[1].consumer == "c2");
    CHECK_THAT(violations[1].explanation, Catch::Contains("dead_lettered consumer=\"c2\""));
}
