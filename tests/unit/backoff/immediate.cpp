// SPDX-License-Identifier: BSL-1.0

#include <letterbox/backoff/immediate.hpp>

#include "support.hpp"

#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace unit_backoff_immediate {

namespace {

using namespace backoff_test;

// Runs a handler that always fails under policy `p` the way a retry loop would, and counts
// the runs.
template <class Policy>
std::uint32_t runs_until_giving_up(const Policy& p) {
    for (std::uint32_t attempt = 1;; ++attempt) {
        if (p.decide(failure(attempt)).what == retry_decision::action::give_up) {
            return attempt;
        }
    }
}

} // namespace

static_assert(letterbox::retry_policy<backoff::immediate>);

TEST_CASE("immediate retries at once until the attempts run out", "[retry][immediate]") {
    const backoff::immediate p(3);
    CHECK(p.max_attempts() == 3);
    CHECK(p.decide(failure(1)) == retry_decision::retry_after(milliseconds{0}));
    CHECK(p.decide(failure(2)) == retry_decision::retry_after(milliseconds{0}));
    CHECK(p.decide(failure(3)) == retry_decision::exhausted());
    CHECK(p.decide(failure(4)) == retry_decision::exhausted());
}

TEST_CASE("immediate's max_attempts counts the first attempt: immediate(5) runs 5 times",
          "[retry][immediate]") {
    CHECK(runs_until_giving_up(backoff::immediate(5)) == 5);
    CHECK(runs_until_giving_up(backoff::immediate(1)) == 1);
}

TEST_CASE("immediate gives up at once on a permanent failure", "[retry][immediate]") {
    const backoff::immediate p(10);
    CHECK(p.decide(failure(1, errc::payload_type_mismatch)) == retry_decision::permanent_failure());
    CHECK(p.decide(failure(10, errc::payload_type_mismatch)) ==
          retry_decision::permanent_failure());
}

TEST_CASE("immediate schedules no waiting", "[retry][immediate]") {
    const backoff::immediate p(std::numeric_limits<std::uint32_t>::max());
    CHECK(p.horizon() == milliseconds{0});
    CHECK(p.base_delay(7) == milliseconds{0});
    CHECK(p.delay(7, "m") == milliseconds{0});
    CHECK(p.decide(failure(1'000'000)) == retry_decision::retry_after(milliseconds{0}));
}

TEST_CASE("immediate refuses zero attempts", "[retry][immediate]") {
    CHECK(backoff_test::error_thrown_by([] { (void)backoff::immediate(0); }) ==
          errc::invalid_argument);
}

TEST_CASE("immediate uses the classifier it is given", "[retry][immediate]") {
    STATIC_REQUIRE(
        std::is_same_v<decltype(backoff::immediate(2).with_classifier({})), backoff::immediate>);
    const auto p = backoff::immediate(4).with_classifier(
        backoff::classifier{}.permanent(std::errc::permission_denied));
    CHECK(p.decide(failure(1, std::make_error_code(std::errc::permission_denied))) ==
          retry_decision::permanent_failure());
    CHECK(p.decide(failure(1)) == retry_decision::retry_after(milliseconds{0}));
    const auto copy = p; // a value: the copy decides the same
    CHECK(copy.decide(failure(1, std::make_error_code(std::errc::permission_denied))) ==
          retry_decision::permanent_failure());
}

} // namespace unit_backoff_immediate
