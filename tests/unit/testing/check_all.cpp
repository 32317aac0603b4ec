// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_all.hpp>

#include <letterbox/message.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <vector>

namespace unit_testing_check_all {

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

TEST_CASE("a history recorded through the public API is checked", "[testing][history][check-all]") {
    //[history_record_and_check
    using namespace letterbox::testing;
    using namespace std::chrono_literals;

    letterbox::message_id_generator ids(42);
    const auto first = ids();
    const auto second = ids();

    history h; // the simulation records what happens, with virtual time
    h.record(0us, transaction_committed{{{first, "order/7", 1}, {second, "order/7", 2}}});
    h.record(1us, broker_delivered{.consumer = "billing", .id = second});
    h.record(2us, effect_applied{
                      .consumer = "billing", .id = second, .aggregate = "order/7", .sequence = 2});
    h.record(3us, broker_delivered{.consumer = "billing", .id = first});
    h.record(4us, effect_applied{
                      .consumer = "billing", .id = first, .aggregate = "order/7", .sequence = 1});

    const auto violations =
        check_all(h, {.consumers = {"billing"}, .max_deliveries = 5, .settle_within = 1s});
    REQUIRE(violations.size() == 1); // sequence 2 overtook sequence 1
    CHECK(violations[0].which == invariant::aggregate_order);
    CHECK(violations[0].id == second);
    CHECK(violations[0].events == std::vector<std::size_t>{2, 0, 4});
    //]
}

} // namespace unit_testing_check_all
