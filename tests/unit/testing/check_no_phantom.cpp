// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_no_phantom.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <vector>

namespace unit_testing_check_no_phantom {

using namespace history_test;

TEST_CASE("no-phantom passes when everything observed was committed first",
          "[testing][history][no-phantom]") {
    script s;
    s.rollback(9); // rolled back and never seen again: fine
    s.happy("billing", 1);
    s.fault(fault_kind::poison_message, 7); // a fault naming a message is not an observation
    s.rollback(2).commit(2).relay(2).deliver("billing", 2); // a retried transaction committed
    CHECK(check_no_phantom(s.h).empty());
}

TEST_CASE("no-phantom reports what is observed for a rolled-back transaction",
          "[testing][history][no-phantom]") {
    script s;
    s.happy("billing", 1);
    s.rollback(2, "order/5", 3);
    const auto rollback = s.last();
    s.relay(2);
    const auto published = rollback + 1;
    s.deliver("billing", 2).effect("billing", 2, "order/5", 3);

    const auto violations = check_no_phantom(s.h);
    REQUIRE(violations.size() == 1); // one per message, at its first observation
    const auto& v = violations[0];
    CHECK(v.which == invariant::no_phantom);
    CHECK(v.id == id(2));
    CHECK(v.events == std::vector<std::size_t>{rollback, published});
    CHECK_THAT(v.explanation,
               Catch::Contains("the transaction that wrote it rolled back") &&
                   Catch::Contains("observed: #" + std::to_string(published) + " @") &&
                   Catch::Contains("relay_published"));
}

TEST_CASE("no-phantom reports an effect for a message no transaction wrote",
          "[testing][history][no-phantom]") {
    script s;
    s.effect("billing", 4);
    const auto violations = check_no_phantom(s.h);
    REQUIRE(violations.size() == 1);
    CHECK(violations[0].id == id(4));
    CHECK(violations[0].events == std::vector<std::size_t>{0});
    CHECK_THAT(violations[0].explanation, Catch::Contains("no transaction ever wrote it"));
}

TEST_CASE("no-phantom reports a delivery before the commit", "[testing][history][no-phantom]") {
    script s;
    s.deliver("billing", 1).commit(1, "order/1", 1);
    const auto violations = check_no_phantom(s.h);
    REQUIRE(violations.size() == 1);
    CHECK(violations[0].aggregate == "order/1");
    CHECK(violations[0].events == std::vector<std::size_t>{0, 1});
    CHECK_THAT(violations[0].explanation,
               Catch::Contains("observed before the transaction that wrote it committed"));
}

} // namespace unit_testing_check_no_phantom
