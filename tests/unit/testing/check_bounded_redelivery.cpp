// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_bounded_redelivery.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <vector>

namespace unit_testing_check_bounded_redelivery {

using namespace history_test;

TEST_CASE("bounded-redelivery passes at the bound", "[testing][history][bounded-redelivery]") {
    script s;
    s.commit(1).relay(1);
    s.deliver("billing", 1, 1).nack("billing", 1).deliver("billing", 1, 2).nack("billing", 1);
    s.deliver("billing", 1, 3).dead_letter("billing", 1, "max attempts");
    s.deliver("shipping", 1).apply("shipping", 1);
    CHECK(check_bounded_redelivery(s.h, 3).empty());
}

TEST_CASE("bounded-redelivery reports deliveries over the bound",
          "[testing][history][bounded-redelivery]") {
    script s;
    s.commit(1, "order/2", 5).relay(1);
    std::vector<std::size_t> deliveries;
    for (std::uint32_t attempt = 1; attempt <= 4; ++attempt) {
        s.deliver("billing", 1, attempt);
        deliveries.push_back(s.last());
        s.nack("billing", 1);
    }
    const auto violations = check_bounded_redelivery(s.h, 2);
    REQUIRE(violations.size() == 1);
    const auto& v = violations[0];
    CHECK(v.which == invariant::bounded_redelivery);
    CHECK(v.id == id(1));
    CHECK(v.consumer == "billing");
    CHECK(v.aggregate == "order/2");
    CHECK(v.events == std::vector<std::size_t>{deliveries[0], deliveries[2], deliveries[3]});
    CHECK_THAT(v.explanation,
               Catch::Contains("4 times, more than the bound of 2") &&
                   Catch::Contains("first over the bound: #" + std::to_string(deliveries[2])));
    CHECK(check_bounded_redelivery(s.h, 4).empty());
}

} // namespace unit_testing_check_bounded_redelivery
