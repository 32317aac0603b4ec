// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_convergence.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

namespace unit_testing_check_convergence {

using namespace history_test;
using namespace std::chrono_literals;

TEST_CASE("convergence passes when everything settles by the deadline after the last fault",
          "[testing][history][convergence]") {
    script s;
    s.at(0ms).commit(1).commit(2);
    s.at(10ms).fault(fault_kind::connection_drop);
    s.at(12ms).deliver("billing", 1).apply("billing", 1);
    s.at(13ms).deliver("billing", 2).dead_letter("billing", 2, "permanent");
    s.at(100ms).commit(3).at(104ms).apply("billing", 3); // after the faults: from its commit
    CHECK(check_convergence(s.h, {"billing"}, 5ms).empty());
}

TEST_CASE("convergence reports what settles after the deadline or never",
          "[testing][history][convergence]") {
    script s;
    s.at(0ms).commit(1).commit(2);
    s.at(10ms).fault(fault_kind::broker_restart);
    const auto fault = s.last();
    s.at(16ms).deliver("billing", 1).apply("billing", 1);
    const auto applied = s.last() - 2;

    const auto violations = check_convergence(s.h, {"billing"}, 5ms);
    REQUIRE(violations.size() == 2);
    const auto& late = violations[0];
    CHECK(late.which == invariant::convergence);
    CHECK(late.id == id(1));
    CHECK(late.consumer == "billing");
    CHECK(late.events == std::vector<std::size_t>{0, fault, applied});
    CHECK_THAT(late.explanation, Catch::Contains("settled at @16001000, but the deadline was "
                                                 "@15000000"));
    CHECK(violations[1].id == id(2));
    CHECK(violations[1].events == std::vector<std::size_t>{1, fault});
    CHECK_THAT(violations[1].explanation, Catch::Contains("never settled"));

    CHECK(check_convergence(s.h, {"billing"}, 7ms).size() == 1); // only the unsettled one
}

} // namespace unit_testing_check_convergence
