// SPDX-License-Identifier: BSL-1.0

#include <letterbox/detail/group_lines.hpp>

#include <catch2/catch.hpp>

#include <optional>
#include <string>

namespace unit_detail_group_lines {

using lines = letterbox::detail::group_lines<int>;
constexpr std::optional<int> none = std::nullopt;

TEST_CASE("group_lines runs one item per group, in arrival order", "[detail][groups]") {
    lines l(0);
    CHECK(l.admit("a", 1) == 1);
    CHECK(l.admit("a", 2) == none);
    CHECK(l.admit("b", 3) == 3);
    CHECK(l.admit("a", 4) == none);
    CHECK(l.running() == 2);
    CHECK(l.waiting() == 2);
    CHECK(l.finish("a") == 2);
    CHECK(l.finish("a") == 4);
    CHECK(l.finish("a") == none);
    CHECK(l.finish("b") == none);
    CHECK(l.running() == 0);
    CHECK(l.waiting() == 0);
}

TEST_CASE("group_lines keeps to its limit, and groups take free places in the order they became "
          "ready",
          "[detail][groups]") {
    lines l(2);
    CHECK(l.admit("a", 1) == 1);
    CHECK(l.admit("a", 2) == none);
    CHECK(l.admit("b", 3) == 3);
    CHECK(l.admit("c", 4) == none); // no place
    CHECK(l.admit("d", 5) == none);
    // a's next became ready after c and d: they go first.
    CHECK(l.finish("a") == 4);
    CHECK(l.finish("b") == 5);
    CHECK(l.finish("c") == 2);
    CHECK(l.running() == 2);
}

TEST_CASE("group_lines ignores a finish of a group that runs nothing", "[detail][groups]") {
    lines l(1);
    CHECK(l.finish("a") == none);
    CHECK(l.admit("a", 1) == 1);
    CHECK(l.admit("b", 2) == none);
    CHECK(l.finish("b") == none); // b waits, it does not run
    CHECK(l.running() == 1);
    CHECK(l.finish("a") == 2);
}

} // namespace unit_detail_group_lines
