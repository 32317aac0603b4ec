// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/check_poison_isolation.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <vector>

namespace unit_testing_check_poison_isolation {

using namespace history_test;

namespace {

// Message 1 is poison; 2 and 3 are ordinary; 4 fails for good (a fault names it).
script poisoned_run() {
    script s;
    s.commit(1, "a", 1).commit(2, "b", 2).commit(3, "c", 3).commit(4, "d", 4);
    s.fault(fault_kind::poison_message, 1, "throws on every attempt");
    s.fault(fault_kind::handler_permanent_failure, 4);
    s.deliver("billing", 1).nack("billing", 1).deliver("billing", 2).apply("billing", 2, "b", 2);
    s.deliver("billing", 1, 2).dead_letter("billing", 1, "poison: max attempts");
    s.deliver("billing", 4).dead_letter("billing", 4, "permanent failure");
    return s;
}

} // namespace

TEST_CASE("poison-isolation passes when the poison is dead-lettered and the rest applied",
          "[testing][history][poison-isolation]") {
    auto s = poisoned_run();
    s.deliver("billing", 3).apply("billing", 3, "c", 3);
    CHECK(check_poison_isolation(s.h, {"billing"}).empty());
}

TEST_CASE("poison-isolation is vacuous without a poison message",
          "[testing][history][poison-isolation]") {
    script s;
    s.commit(1); // lost, but that is no-loss's business
    CHECK(check_poison_isolation(s.h, {"billing"}).empty());
}

TEST_CASE("poison-isolation reports the messages the poison starved",
          "[testing][history][poison-isolation]") {
    auto s = poisoned_run();
    s.deliver("billing", 3).dead_letter("billing", 3, "timed out behind the poison");
    const auto dead = s.last();
    const auto violations = check_poison_isolation(s.h, {"billing"});
    REQUIRE(violations.size() == 1);
    const auto& v = violations[0];
    CHECK(v.which == invariant::poison_isolation);
    CHECK(v.id == id(3));
    CHECK(v.consumer == "billing");
    CHECK(v.aggregate == "c");
    CHECK(v.events == std::vector<std::size_t>{2, dead, dead});
    CHECK_THAT(v.explanation, Catch::Contains("was starved") &&
                                  Catch::Contains("dead-lettered, though no fault named it"));
}

TEST_CASE("poison-isolation reports a poison message that was not dead-lettered",
          "[testing][history][poison-isolation]") {
    script s;
    s.commit(1).fault(fault_kind::poison_message, 1);
    const auto marked = s.last();
    s.deliver("billing", 1).nack("billing", 1);
    const auto violations = check_poison_isolation(s.h, {"billing"});
    REQUIRE(violations.size() == 1);
    CHECK(violations[0].id == id(1));
    CHECK(violations[0].events == std::vector<std::size_t>{marked, s.last()});
    CHECK_THAT(violations[0].explanation,
               Catch::Contains("was not dead-lettered with a reason for consumer \"billing\""));
}

} // namespace unit_testing_check_poison_isolation
