// SPDX-License-Identifier: BSL-1.0

#include <letterbox/detail/group_lines.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace unit_detail_group_lines {

using lines = letterbox::detail::group_lines<int>;

TEST_CASE("group_lines runs one item per group, in arrival order", "[detail][groups]") {
    lines l(0);
    std::vector<int> start;
    l.admit("a", 1, start);
    l.admit("a", 2, start);
    l.admit("b", 3, start);
    l.admit("a", 4, start);
    CHECK(start == std::vector<int>{1, 3});
    CHECK(l.running() == 2);
    CHECK(l.waiting() == 2);
    start.clear();
    l.finish("a", start);
    CHECK(start == std::vector<int>{2});
    start.clear();
    l.finish("a", start);
    CHECK(start == std::vector<int>{4});
    start.clear();
    l.finish("a", start);
    l.finish("b", start);
    CHECK(start.empty());
    CHECK(l.running() == 0);
    CHECK(l.waiting() == 0);
}

TEST_CASE("group_lines keeps to its limit, and groups take free places in the order they became "
          "ready",
          "[detail][groups]") {
    lines l(2);
    std::vector<int> start;
    l.admit("a", 1, start);
    l.admit("a", 2, start);
    l.admit("b", 3, start);
    l.admit("c", 4, start);
    l.admit("d", 5, start);
    CHECK(start == std::vector<int>{1, 3});
    start.clear();
    // a's next became ready after c and d: they go first.
    l.finish("a", start);
    CHECK(start == std::vector<int>{4});
    start.clear();
    l.finish("b", start);
    CHECK(start == std::vector<int>{5});
    start.clear();
    l.finish("c", start);
    CHECK(start == std::vector<int>{2});
    CHECK(l.running() == 2);
}

TEST_CASE("group_lines ignores a finish of a group that runs nothing", "[detail][groups]") {
    lines l(1);
    std::vector<int> start;
    l.finish("a", start);
    l.admit("a", 1, start);
    l.admit("b", 2, start);
    start.clear();
    l.finish("b", start); // b waits, it does not run
    CHECK(start.empty());
    CHECK(l.running() == 1);
    l.finish("a", start);
    CHECK(start == std::vector<int>{2});
}

} // namespace unit_detail_group_lines
