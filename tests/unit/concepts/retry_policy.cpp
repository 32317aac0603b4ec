// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of retry_policy is necessary. Every type below is almost a retry
// policy, and the concept must reject it.

#include <letterbox/concepts/retry_policy.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>

namespace unit_concepts_retry_policy {

namespace {

using letterbox::attempt_failure;
using letterbox::retry_decision;
using std::chrono::milliseconds;

struct policy {
    retry_decision decide(const attempt_failure&) const { return {}; }
    std::uint32_t max_attempts() const { return 1; }
    milliseconds horizon() const { return {}; }
};

// Clause 2: decide.
struct without_decide {
    std::uint32_t max_attempts() const { return 1; }
    milliseconds horizon() const { return {}; }
};
struct deciding_mutably {
    retry_decision decide(const attempt_failure&) { return {}; }
    std::uint32_t max_attempts() const { return 1; }
    milliseconds horizon() const { return {}; }
};
struct deciding_an_action {
    retry_decision::action decide(const attempt_failure&) const { return {}; }
    std::uint32_t max_attempts() const { return 1; }
    milliseconds horizon() const { return {}; }
};
struct deciding_by_reference {
    const retry_decision& decide(const attempt_failure&) const { return decision_; }
    std::uint32_t max_attempts() const { return 1; }
    milliseconds horizon() const { return {}; }
    retry_decision decision_{};
};
struct deciding_from_the_attempt_number {
    retry_decision decide(std::uint32_t) const { return {}; }
    std::uint32_t max_attempts() const { return 1; }
    milliseconds horizon() const { return {}; }
};

// Clause 3: max_attempts.
struct without_max_attempts {
    retry_decision decide(const attempt_failure&) const { return {}; }
    milliseconds horizon() const { return {}; }
};
struct counting_attempts_in_int {
    retry_decision decide(const attempt_failure&) const { return {}; }
    int max_attempts() const { return 1; }
    milliseconds horizon() const { return {}; }
};
struct counting_attempts_mutably {
    retry_decision decide(const attempt_failure&) const { return {}; }
    std::uint32_t max_attempts() { return 1; }
    milliseconds horizon() const { return {}; }
};

// Clause 4: horizon.
struct without_horizon {
    retry_decision decide(const attempt_failure&) const { return {}; }
    std::uint32_t max_attempts() const { return 1; }
};
struct horizon_in_seconds {
    retry_decision decide(const attempt_failure&) const { return {}; }
    std::uint32_t max_attempts() const { return 1; }
    std::chrono::seconds horizon() const { return {}; }
};
struct horizon_as_a_count {
    retry_decision decide(const attempt_failure&) const { return {}; }
    std::uint32_t max_attempts() const { return 1; }
    std::int64_t horizon() const { return 0; }
};

// Clause 1: copyable.
struct not_copyable {
    not_copyable() = default;
    not_copyable(const not_copyable&) = delete;
    retry_decision decide(const attempt_failure&) const { return {}; }
    std::uint32_t max_attempts() const { return 1; }
    milliseconds horizon() const { return {}; }
};

} // namespace

TEST_CASE("a copyable type with const decide, max_attempts and horizon is a retry_policy",
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

TEST_CASE("a type without max_attempts is not a retry_policy", "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<without_max_attempts>);
}

TEST_CASE("a type whose max_attempts is not a std::uint32_t is not a retry_policy",
          "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<counting_attempts_in_int>);
}

TEST_CASE("a type whose max_attempts is not const is not a retry_policy",
          "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<counting_attempts_mutably>);
}

TEST_CASE("a type without horizon is not a retry_policy", "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<without_horizon>);
}

TEST_CASE("a type whose horizon is in seconds is not a retry_policy", "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<horizon_in_seconds>);
}

TEST_CASE("a type whose horizon is a plain number is not a retry_policy",
          "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<horizon_as_a_count>);
}

TEST_CASE("a type that is not copyable is not a retry_policy", "[concepts][retry_policy]") {
    STATIC_REQUIRE(!letterbox::retry_policy<not_copyable>);
}

TEST_CASE("retry_decision's factories say retry, exhausted or permanent",
          "[concepts][retry_policy]") {
    using action = retry_decision::action;
    constexpr auto r = retry_decision::retry_after(milliseconds{250});
    STATIC_REQUIRE(r.what == action::retry);
    STATIC_REQUIRE(r.delay == milliseconds{250});
    STATIC_REQUIRE_FALSE(r.permanent);
    constexpr auto e = retry_decision::exhausted();
    STATIC_REQUIRE(e.what == action::give_up);
    STATIC_REQUIRE_FALSE(e.permanent);
    constexpr auto p = retry_decision::permanent_failure();
    STATIC_REQUIRE(p.what == action::give_up);
    STATIC_REQUIRE(p.permanent);
    STATIC_REQUIRE(e != p);
    STATIC_REQUIRE(retry_decision{} == e); // the default decision is "give up, not permanent"
}

} // namespace unit_concepts_retry_policy
