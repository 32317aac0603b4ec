// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_no_duplicate_effect.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <vector>

namespace unit_testing_check_no_duplicate_effect {

using namespace history_test;

TEST_CASE("no-duplicate-effect allows duplicate deliveries and one effect per consumer",
          "[testing][history][no-duplicate-effect]") {
    script s;
    s.commit(1).relay(1);
    s.deliver("billing", 1).fault(fault_kind::duplicate_delivery, 1).deliver("billing", 1, 2);
    s.apply("billing", 1);
    s.deliver("shipping", 1).apply("shipping", 1); // another consumer: its own effect
    CHECK(check_no_duplicate_effect(s.h).empty());
}

TEST_CASE("no-duplicate-effect reports a second effect of one message for one consumer",
          "[testing][history][no-duplicate-effect]") {
    script s;
    s.happy("billing", 1, "order/3", 1);
    const auto first = s.last() - 2; // apply records effect, inbox, ack
    s.deliver("billing", 1, 2).effect("billing", 1, "order/3", 1);
    const auto second = s.last();

    const auto violations = check_no_duplicate_effect(s.h);
    REQUIRE(violations.size() == 1);
    const auto& v = violations[0];
    CHECK(v.which == invariant::no_duplicate_effect);
    CHECK(v.id == id(1));
    CHECK(v.consumer == "billing");
    CHECK(v.aggregate == "order/3");
    CHECK(v.events == std::vector<std::size_t>{first, second});
    CHECK_THAT(v.explanation, Catch::Contains("applied message 00000000-0000-0000-0000-"
                                              "000000000001 (aggregate \"order/3\", sequence "
                                              "1) 2 times"));
}

} // namespace unit_testing_check_no_duplicate_effect
