// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of unit_of_work is necessary.

#include <letterbox/concepts/unit_of_work.hpp>

#include <catch2/catch.hpp>

#include <functional>
#include <system_error>

namespace unit_concepts_unit_of_work {

namespace {

struct with_commit {
    std::error_code commit() { return {}; }
};
struct with_rollback {
    std::error_code rollback() { return {}; }
};
struct with_on_commit {
    std::error_code on_commit(std::function<void()>) { return {}; }
};
struct with_void_commit {
    void commit() {}
};
struct immovable {
    immovable() = default;
    immovable(immovable&&) = delete;
};

template <class... Parts>
struct unit_of : Parts... {};

} // namespace

TEST_CASE("a type with commit, rollback and on_commit is a unit_of_work",
          "[concepts][unit_of_work]") {
    STATIC_REQUIRE(letterbox::unit_of_work<unit_of<with_commit, with_rollback, with_on_commit>>);
}

TEST_CASE("a type without commit is not a unit_of_work", "[concepts][unit_of_work]") {
    STATIC_REQUIRE(!letterbox::unit_of_work<unit_of<with_rollback, with_on_commit>>);
}

TEST_CASE("a type whose commit returns no error_code is not a unit_of_work",
          "[concepts][unit_of_work]") {
    STATIC_REQUIRE(
        !letterbox::unit_of_work<unit_of<with_void_commit, with_rollback, with_on_commit>>);
}

TEST_CASE("a type without rollback is not a unit_of_work", "[concepts][unit_of_work]") {
    STATIC_REQUIRE(!letterbox::unit_of_work<unit_of<with_commit, with_on_commit>>);
}

TEST_CASE("a type without on_commit is not a unit_of_work", "[concepts][unit_of_work]") {
    STATIC_REQUIRE(!letterbox::unit_of_work<unit_of<with_commit, with_rollback>>);
}

TEST_CASE("an immovable type is not a unit_of_work", "[concepts][unit_of_work]") {
    STATIC_REQUIRE(
        !letterbox::unit_of_work<unit_of<with_commit, with_rollback, with_on_commit, immovable>>);
}

} // namespace unit_concepts_unit_of_work
