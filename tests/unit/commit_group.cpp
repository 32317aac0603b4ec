// SPDX-License-Identifier: BSL-1.0

#include <letterbox/commit_group.hpp>

#include <letterbox/in_memory_unit_of_work.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace unit_commit_group {

namespace {

using letterbox::errc;

/// A unit of another type: the group holds one type of unit.
struct other_unit {
    std::error_code commit() { return {}; }
};

} // namespace

TEST_CASE("commit_group begins its unit once, commits it, then runs after_commit",
          "[commit_group]") {
    letterbox::commit_group group;
    int begun = 0;
    auto begin = [&] {
        ++begun;
        return letterbox::in_memory_unit_of_work{};
    };
    CHECK_FALSE(group.has_unit());
    auto* u = group.unit<letterbox::in_memory_unit_of_work>(begin);
    REQUIRE(u != nullptr);
    CHECK(group.unit<letterbox::in_memory_unit_of_work>(begin) == u);
    CHECK(begun == 1);
    auto other = [] {
        return other_unit{};
    };
    CHECK(group.unit<other_unit>(other) == nullptr); // another store commits on its own

    std::vector<std::string> order;
    REQUIRE_FALSE(u->on_commit([&] { order.emplace_back("unit"); }));
    group.after_commit([&] { order.emplace_back("group"); });
    CHECK(order.empty());
    REQUIRE_FALSE(group.commit());
    CHECK(order == std::vector<std::string>{"unit", "group"});
    CHECK(group.finished());
    CHECK(group.commit() == errc::transaction_closed);
    CHECK(group.unit<letterbox::in_memory_unit_of_work>(begin) == nullptr);
}

TEST_CASE("commit_group without a unit commits nothing, and abandon discards everything",
          "[commit_group]") {
    letterbox::commit_group empty;
    bool ran = false;
    empty.after_commit([&] { ran = true; });
    CHECK_FALSE(empty.commit());
    CHECK(ran);

    letterbox::commit_group dead;
    auto begin = [] {
        return letterbox::in_memory_unit_of_work{};
    };
    auto* u = dead.unit<letterbox::in_memory_unit_of_work>(begin);
    bool committed = false;
    REQUIRE_FALSE(u->on_commit([&] { committed = true; }));
    dead.after_commit([&] { committed = true; });
    dead.abandon();
    CHECK(dead.commit() == errc::transaction_closed);
    CHECK_FALSE(committed);
}

TEST_CASE("commit_group keeps no unit when beginning one throws", "[commit_group]") {
    letterbox::commit_group group;
    auto busy = []() -> letterbox::in_memory_unit_of_work {
        throw std::runtime_error("database is locked");
    };
    CHECK_THROWS_AS(group.unit<letterbox::in_memory_unit_of_work>(busy), std::runtime_error);
    CHECK_FALSE(group.has_unit());
    auto begin = [] {
        return letterbox::in_memory_unit_of_work{};
    };
    CHECK(group.unit<letterbox::in_memory_unit_of_work>(begin) != nullptr);
}

} // namespace unit_commit_group
