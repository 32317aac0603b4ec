// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_all.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

using namespace history_test;
using namespace std::chrono_literals;

TEST_CASE("check_all passes a clean run", "[testing][history][check-all]") {
    //[history_check_all
    script s;
    s.happy("billing", 1, "order/1", 1).happy("billing", 2, "order/1", 2);
    const history_expectations expect{
        .consumers = {"billing"}, .max_deliveries = 3, .settle_within = 1s};
    CHECK(check_all(s.h, expect).empty());
    //]
    CHECK(check_all(s.h, s.h, expect).empty());
}

TEST_CASE("check_all runs every checker, grouped by invariant", "[testing][history][check-all]") {
    script s;
    s.commit(1, "a", 1).commit(2, "a", 2).relay(1).relay(2);
    s.effect("billing", 2, "a", 2).effect("billing", 2, "a", 2); // overtakes 1, twice
    s.deliver("billing", 3);                                     // a phantom
    s.deliver("billing", 2).deliver("billing", 2);               // over the bound of 1
    const history_expectations expect{
        .consumers = {"billing"}, .max_deliveries = 1, .settle_within = 1ns};
    const auto violations = check_all(s.h, expect);
    std::vector<invariant> which;
    for (const auto& v : violations) {
        which.push_back(v.which);
    }
    CHECK(which == std::vector<invariant>{invariant::no_loss, invariant::no_phantom,
                                          invariant::no_duplicate_effect,
                                          invariant::aggregate_order, invariant::bounded_redelivery,
                                          invariant::convergence, invariant::convergence});

    const history_expectations lax{
        .consumers = {"billing"}, .max_deliveries = {}, .settle_within = {}};
    CHECK(check_all(s.h, lax).size() == 4); // the optional checks are off

    script other = s;
    other.commit(9);
    const auto with_replay = check_all(s.h, other.h, lax);
    REQUIRE(with_replay.size() == 5);
    CHECK(with_replay.back().which == invariant::determinism);
}
