// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of retry_policy is necessary. Every type below is almost a retry
// policy, and the concept must reject it.

#include <letterbox/concepts/retry_policy.hpp>

#include <catch2/catch.hpp>

#include <cstdint>

namespace {

using letterbox::attempt_failure;
using letterbox::retry_decision;

struct policy {
    retry_decision decide(const attempt_failure&) const { return {}; }
};
struct without_decide {};
struct deciding_mutably {
    retry_decision decide(const attempt_failure&) { return {}; }
};
struct deciding_an_action {
    retry_decision::action decide(const attempt_failure&) const { return {}; }
};
struct deciding_by_reference {
    const retry_decision& decide(const attempt_failure&) const { return decision_; }
    retry_decision decision_{};
};
struct deciding_from_the_attempt_number {
    retry_decision decide(std::uint32_t) const { return {}; }
};
struct not_copyable {
    not_copyable() = default;
    not_copyable(const not_copyable&) = delete;
    retry_decision decide(const attempt_failure&) const { return {}; }
};

} // namespace

TEST_CASE("a copyable type with a const decide returning a retry_decision is a retry_policy",
          "[concepts][retry_policy]") {
    STATIC_REQUIRE(letterbox::retry_policy<policy>);
}

TEST_CASE("a type without decide is not a retry_policy", "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<without_decide>);
}

TEST_CASE("a type whose decide is not const is not a retry_policy", "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<deciding_mutably>);
}

TEST_CASE("a type whose decide returns only the action is not a retry_policy",
          "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<deciding_an_action>);
}

TEST_CASE("a type whose decide returns a reference is not a retry_policy",
          "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<deciding_by_reference>);
}

TEST_CASE("a type whose decide takes the attempt number only is not a retry_policy",
          "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<deciding_from_the_attempt_number>);
}

TEST_CASE("a type that is not copyable is not a retry_policy", "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<not_copyable>);
}
