// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_determinism.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <vector>

namespace unit_testing_check_determinism {

using namespace history_test;

TEST_CASE("determinism passes for two equal runs", "[testing][history][determinism]") {
    script a;
    script b;
    a.happy("billing", 1).happy("billing", 2);
    b.happy("billing", 1).happy("billing", 2);
    CHECK(check_determinism(a.h, b.h).empty());
    CHECK(check_determinism(history{}, history{}).empty());
}

TEST_CASE("determinism reports the first line where two runs differ",
          "[testing][history][determinism]") {
    script a;
    script b;
    a.happy("billing", 1).happy("billing", 2);
    b.happy("billing", 1).commit(2).relay(2).deliver("billing", 2, 2);
    const auto violations = check_determinism(a.h, b.h);
    REQUIRE(violations.size() == 1);
    const auto& v = violations[0];
    CHECK(v.which == invariant::determinism);
    CHECK(v.events == std::vector<std::size_t>{12});
    CHECK_THAT(v.explanation,
               Catch::Contains("first at event #12") &&
                   Catch::Contains("first run:  @12000 broker_delivered consumer=\"billing\" "
                                   "id=00000000-0000-0000-0000-000000000002 redelivered=false") &&
                   Catch::Contains("redelivered=true attempt=2"));
}

TEST_CASE("determinism reports a run that is a prefix of the other",
          "[testing][history][determinism]") {
    script a;
    script b;
    a.happy("billing", 1);
    b.happy("billing", 1).commit(2);
    const auto violations = check_determinism(a.h, b.h);
    REQUIRE(violations.size() == 1);
    CHECK(violations[0].events == std::vector<std::size_t>{a.h.size()});
    CHECK_THAT(violations[0].explanation, Catch::Contains("first run:  (end of history)"));
}

} // namespace unit_testing_check_determinism
