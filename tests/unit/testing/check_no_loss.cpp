// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_no_loss.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace unit_testing_check_no_loss {

using namespace history_test;

TEST_CASE("no-loss passes when every committed message is applied or dead-lettered",
          "[testing][history][no-loss]") {
    script s;
    s.happy("billing", 1, "order/1", 1);
    s.commit(2, "order/1", 2).relay(2).deliver("billing", 2).nack("billing", 2);
    s.deliver("billing", 2, 2).dead_letter("billing", 2, "handler: permanent failure");
    s.commit(3, "order/2", 3).dead_letter("", 3, "relay gave up"); // before any consumer
    CHECK(check_no_loss(s.h, {"billing"}).empty());
    CHECK(check_no_loss(s.h, {}).empty()); // no consumer must see anything
}

TEST_CASE("no-loss reports a committed message a consumer never settled",
          "[testing][history][no-loss]") {
    script s;
    s.happy("billing", 1);
    s.commit(2, "order/9", 4);
    const auto commit = s.last();
    s.relay(2).deliver("billing", 2).nack("billing", 2);
    const auto nack = s.last();
    s.effect("shipping", 2, "order/9", 4); // another consumer applied it: not enough

    const auto violations = check_no_loss(s.h, {"billing", "shipping"});
    REQUIRE(violations.size() == 2); // in commit order
    const auto& v = violations[1];
    CHECK(v.which == invariant::no_loss);
    CHECK(v.id == id(2));
    CHECK(v.consumer == "billing");
    CHECK(v.aggregate == "order/9");
    CHECK(v.events == std::vector<std::size_t>{commit, nack + 1});
    CHECK_THAT(v.explanation, Catch::Contains("consumer \"billing\" neither applied it") &&
                                  Catch::Contains("(1 deliveries to it)") &&
                                  Catch::Contains("committed: #" + std::to_string(commit)) &&
                                  Catch::Contains("last seen: #" + std::to_string(nack + 1)));
    // Message 1 was never delivered to shipping at all.
    CHECK(violations[0].id == id(1));
    CHECK(violations[0].consumer == "shipping");
    CHECK_THAT(violations[0].explanation, Catch::Contains("(0 deliveries to it)"));
}

TEST_CASE("no-loss does not accept a dead letter without a reason", "[testing][history][no-loss]") {
    script s;
    s.commit(1).relay(1).deliver("billing", 1).dead_letter("billing", 1, "");
    const auto dead = s.last();
    const auto violations = check_no_loss(s.h, {"billing"});
    REQUIRE(violations.size() == 1);
    CHECK(violations[0].id == id(1));
    CHECK(violations[0].events == std::vector<std::size_t>{0, dead, dead});
    CHECK_THAT(violations[0].explanation,
               Catch::Contains("dead-lettered without a reason: #" + std::to_string(dead)));
}

TEST_CASE("no-loss reports a message that was committed and never published",
          "[testing][history][no-loss]") {
    script s;
    s.commit(1);
    const auto violations = check_no_loss(s.h, {"billing"});
    REQUIRE(violations.size() == 1);
    CHECK_THAT(violations[0].explanation, Catch::Contains("never published, delivered or applied"));
}

} // namespace unit_testing_check_no_loss
