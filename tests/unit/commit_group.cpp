// SPDX-License-Identifier: BSL-1.0

#include <letterbox/commit_group.hpp>

#include <letterbox/in_memory_unit_of_work.hpp>

#include <catch2/catch.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace unit_commit_group {

namespace {

using letterbox::errc;

/// A unit of another type: the group holds one type of unit.
struct other_unit {
    std::error_code commit() { return {}; }
    std::error_code on_commit(std::function<void()>) { return {}; }
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

TEST_CASE("commit_group keeps no unit when beginning one throws, and does not try again",
          "[commit_group]") {
    letterbox::commit_group group;
    int tries = 0;
    auto busy = [&]() -> letterbox::in_memory_unit_of_work {
        ++tries;
        throw std::runtime_error("database is locked");
    };
    CHECK_THROWS_AS(group.unit<letterbox::in_memory_unit_of_work>(busy), std::runtime_error);
    CHECK_FALSE(group.has_unit());
    // The next member learns the same failure at once: a locked database is waited for once.
    CHECK_THROWS_AS(group.unit<letterbox::in_memory_unit_of_work>(busy), std::runtime_error);
    CHECK(tries == 1);
    CHECK_FALSE(group.commit()); // nothing to commit
}

TEST_CASE("commit_group gives its unit only to callers with the same owner, or none",
          "[commit_group]") {
    letterbox::commit_group group;
    int first_store = 0;
    int second_store = 0;
    auto begin = [] {
        return letterbox::in_memory_unit_of_work{};
    };
    auto* u = group.unit<letterbox::in_memory_unit_of_work>(begin, &first_store);
    REQUIRE(u != nullptr);
    CHECK(group.unit<letterbox::in_memory_unit_of_work>(begin, &first_store) == u);
    CHECK(group.unit<letterbox::in_memory_unit_of_work>(begin, &second_store) == nullptr);
    CHECK(group.unit<letterbox::in_memory_unit_of_work>(begin) == u); // no owner: any
    REQUIRE_FALSE(group.commit());
    CHECK(group.applied());
}

} // namespace unit_commit_group
