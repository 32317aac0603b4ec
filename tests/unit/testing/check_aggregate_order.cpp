// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_aggregate_order.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace unit_testing_check_aggregate_order {

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

TEST_CASE("aggregate-order skips, for one consumer, an aggregate whose delivery was deferred",
          "[testing][history][aggregate-order]") {
    script s;
    s.commit(1, "a", 1).commit(2, "a", 2).commit(3, "b", 3).commit(4, "b", 4);
    // c1 retried message 1, and message 2 overtook it: aggregate "a" is not checked for c1.
    s.defer("c1", 1, "retried").effect("c1", 2, "a", 2).effect("c1", 1, "a", 1);
    // The deferral of "a" by c1 leaves c1's "b" checked, and c2's "a".
    s.effect("c1", 4, "b", 4).effect("c1", 3, "b", 3);
    s.effect("c2", 2, "a", 2).effect("c2", 1, "a", 1);
    const auto violations = check_aggregate_order(s.h);
    REQUIRE(violations.size() == 2);
    CHECK(violations[0].consumer == "c1");
    CHECK(violations[0].aggregate == "b");
    CHECK(violations[1].consumer == "c2");
    CHECK(violations[1].aggregate == "a");

    using pair = std::pair<std::string, std::string>;
    CHECK(letterbox::testing::detail::aggregate_order_scope(s.h) ==
          std::map<pair, bool>{
              {pair{"c1", "a"}, false}, {pair{"c1", "b"}, true}, {pair{"c2", "a"}, true}});
}

TEST_CASE("aggregate-order skips the aggregate even when the deferral comes after the overtaking",
          "[testing][history][aggregate-order]") {
    // A forward is counted when its copy is confirmed: the next event may be applied first.
    script s;
    s.commit(1, "a", 1).commit(2, "a", 2);
    s.effect("c1", 2, "a", 2).defer("c1", 1, "dead_lettered").dead_letter("c1", 1, "bad");
    CHECK(check_aggregate_order(s.h).empty());
}

} // namespace unit_testing_check_aggregate_order
