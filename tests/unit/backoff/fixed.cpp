// SPDX-License-Identifier: BSL-1.0

#include <letterbox/backoff/fixed.hpp>

#include "support.hpp"

#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace unit_backoff_fixed {

namespace {

using namespace backoff_test;

} // namespace

static_assert(letterbox::retry_policy<backoff::fixed>);

TEST_CASE("fixed waits the same delay before every retry until the attempts run out",
          "[retry][fixed]") {
    const backoff::fixed p(milliseconds{500}, 4);
    CHECK(p.max_attempts() == 4);
    CHECK(p.decide(failure(1)) == retry_decision::retry_after(milliseconds{500}));
    CHECK(p.decide(failure(2)) == retry_decision::retry_after(milliseconds{500}));
    CHECK(p.decide(failure(3)) == retry_decision::retry_after(milliseconds{500}));
    CHECK(p.decide(failure(4)) == retry_decision::exhausted());
    CHECK(p.base_delay(1) == milliseconds{500});
    CHECK(p.base_delay(9) == milliseconds{500});
}

TEST_CASE("fixed gives up at once on a permanent failure", "[retry][fixed]") {
    const backoff::fixed p(milliseconds{500}, 4);
    CHECK(p.decide(failure(1, errc::payload_malformed)) == retry_decision::permanent_failure());
    CHECK(p.decide(failure(4, errc::payload_malformed)) == retry_decision::permanent_failure());
}

TEST_CASE("fixed's horizon is the delay times the retries", "[retry][fixed]") {
    CHECK(backoff::fixed(milliseconds{500}, 4).horizon() == milliseconds{1500});
    CHECK(backoff::fixed(milliseconds{500}, 1).horizon() == milliseconds{0});
    CHECK(backoff::fixed(milliseconds{0}, 100).horizon() == milliseconds{0});
    // Saturates instead of overflowing.
    const auto huge = milliseconds::max() / 2;
    CHECK(backoff::fixed(huge, 3).horizon() == huge * 2);
    CHECK(backoff::fixed(huge, 4).horizon() == milliseconds::max());
    CHECK(backoff::fixed(milliseconds{1'000'000'000'000}, std::numeric_limits<std::uint32_t>::max())
              .horizon() == milliseconds::max());
}

TEST_CASE("fixed with jitter lowers each delay, the same way for the same message",
          "[retry][fixed]") {
    const auto p = backoff::fixed(milliseconds{1000}, 50).with_jitter(backoff::jitter::equal(11));
    STATIC_REQUIRE(std::is_same_v<decltype(backoff::fixed(milliseconds{1}, 2).with_jitter({})),
                                  backoff::fixed>);
    CHECK(p.get_jitter() == backoff::jitter::equal(11));
    bool varied = false;
    for (std::uint32_t a = 1; a < 50; ++a) {
        const auto d = p.decide(failure(a, errc::timed_out, "order-9"));
        REQUIRE(d.what == retry_decision::action::retry);
        REQUIRE(d.delay >= milliseconds{500});
        REQUIRE(d.delay <= milliseconds{1000});
        REQUIRE(d.delay == p.delay(a, "order-9"));
        REQUIRE(d == p.decide(failure(a, errc::timed_out, "order-9")));
        varied = varied || d.delay != milliseconds{1000};
    }
    CHECK(varied);
    // The horizon assumes the jitter at its maximum: the un-jittered delays.
    CHECK(p.horizon() == milliseconds{49'000});

    backoff::fixed q(milliseconds{1000}, 3);
    CHECK(&q.with_jitter(backoff::jitter::full(1)) == &q);
    CHECK(q.delay(1, "order-9") <= milliseconds{1000});
}

TEST_CASE("fixed refuses a negative delay and zero attempts", "[retry][fixed]") {
    CHECK(backoff_test::error_thrown_by([] { (void)backoff::fixed(milliseconds{-1}, 3); }) ==
          errc::invalid_argument);
    CHECK(backoff_test::error_thrown_by([] { (void)backoff::fixed(milliseconds{100}, 0); }) ==
          errc::invalid_argument);
    try {
        (void)backoff::fixed(milliseconds{-1}, 3);
        FAIL("no exception");
    } catch (const letterbox::error& e) {
        CHECK(std::string(e.what()).find("delay must not be negative") != std::string::npos);
    }
}

TEST_CASE("fixed uses the classifier it is given", "[retry][fixed]") {
    const auto p = backoff::fixed(milliseconds{100}, 3)
                       .with_jitter(backoff::jitter::full(2))
                       .with_classifier(backoff::classifier{}.permanent<std::logic_error>());
    attempt_failure f;
    f.exception = std::make_exception_ptr(std::out_of_range("no such order"));
    CHECK(p.decide(f) == retry_decision::permanent_failure());
    CHECK(p.get_jitter() == backoff::jitter::full(2)); // with_classifier kept the jitter
}

} // namespace unit_backoff_fixed
