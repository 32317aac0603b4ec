// SPDX-License-Identifier: BSL-1.0

#include <letterbox/backoff/exponential.hpp>

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
#include <vector>

namespace unit_backoff_exponential {

namespace {

using namespace backoff_test;
using std::chrono::seconds;

std::vector<std::int64_t> base_schedule(const backoff::exponential& p, std::uint32_t attempts) {
    std::vector<std::int64_t> out;
    for (std::uint32_t a = 1; a <= attempts; ++a) {
        out.push_back(p.base_delay(a).count());
    }
    return out;
}

constexpr auto max_u32 = std::numeric_limits<std::uint32_t>::max();

} // namespace

static_assert(letterbox::retry_policy<backoff::exponential>);

TEST_CASE("exponential doubles the delay up to the cap", "[retry][exponential]") {
    const backoff::exponential p(milliseconds{100}, 2.0, milliseconds{1000}, 8);
    CHECK(base_schedule(p, 8) ==
          std::vector<std::int64_t>{100, 200, 400, 800, 1000, 1000, 1000, 1000});
    CHECK(p.decide(failure(1)) == retry_decision::retry_after(milliseconds{100}));
    CHECK(p.decide(failure(4)) == retry_decision::retry_after(milliseconds{800}));
    CHECK(p.decide(failure(7)) == retry_decision::retry_after(milliseconds{1000}));
    CHECK(p.decide(failure(8)) == retry_decision::exhausted());
    CHECK(p.horizon() == milliseconds{100 + 200 + 400 + 800 + 1000 + 1000 + 1000});
    CHECK(p.initial() == milliseconds{100});
    CHECK(p.multiplier() == 2.0);
    CHECK(p.cap() == milliseconds{1000});
    CHECK(p.max_attempts() == 8);
}

TEST_CASE("exponential truncates fractional delays to whole milliseconds", "[retry][exponential]") {
    const backoff::exponential p(milliseconds{100}, 1.5, seconds{10}, 6);
    CHECK(base_schedule(p, 5) == std::vector<std::int64_t>{100, 150, 225, 337, 506});
    CHECK(p.horizon() == milliseconds{100 + 150 + 225 + 337 + 506});
}

TEST_CASE("exponential with a multiplier of 1 or an initial delay of 0 is constant",
          "[retry][exponential]") {
    const backoff::exponential flat(milliseconds{250}, 1.0, seconds{1}, 5);
    CHECK(base_schedule(flat, 5) == std::vector<std::int64_t>{250, 250, 250, 250, 250});
    CHECK(flat.horizon() == milliseconds{1000});
    CHECK(flat.base_delay(max_u32) == milliseconds{250});

    const backoff::exponential zero(milliseconds{0}, 3.0, seconds{1}, 5);
    CHECK(base_schedule(zero, 5) == std::vector<std::int64_t>{0, 0, 0, 0, 0});
    CHECK(zero.horizon() == milliseconds{0});
    CHECK(zero.decide(failure(2)) == retry_decision::retry_after(milliseconds{0}));
}

TEST_CASE("exponential's schedule saturates at the cap instead of overflowing",
          "[retry][exponential]") {
    const backoff::exponential p(milliseconds{1}, 1000.0, milliseconds::max(), max_u32);
    CHECK(p.base_delay(2) == milliseconds{1000});
    CHECK(p.base_delay(7) == milliseconds{1'000'000'000'000'000'000});
    CHECK(p.base_delay(8) == milliseconds::max()); // 10^21 ms would overflow: the cap
    CHECK(p.base_delay(max_u32) == milliseconds::max());
    CHECK(p.horizon() == milliseconds::max());

    // A late attempt costs no more than reaching the cap.
    const backoff::exponential capped(milliseconds{100}, 2.0, seconds{30}, max_u32);
    CHECK(capped.base_delay(max_u32 - 1) == seconds{30});
    CHECK(capped.decide(failure(max_u32 - 1)) == retry_decision::retry_after(seconds{30}));
    CHECK(capped.decide(failure(max_u32)) == retry_decision::exhausted());
    // 100 + 200 + ... + 25600 for attempts 1 to 9, then the cap for the other retries.
    CHECK(capped.horizon() == milliseconds{51'100 + 30'000 * (std::int64_t{max_u32} - 10)});
}

TEST_CASE("exponential's first delay is the initial delay, even when it is the cap",
          "[retry][exponential]") {
    const backoff::exponential p(seconds{5}, 2.0, seconds{5}, 4);
    CHECK(base_schedule(p, 4) == std::vector<std::int64_t>{5000, 5000, 5000, 5000});
    CHECK(p.horizon() == seconds{15});
    CHECK(p.base_delay(0) == seconds{5}); // attempt 0 is taken as 1
}

TEST_CASE("exponential with one attempt never retries", "[retry][exponential]") {
    const backoff::exponential p(milliseconds{100}, 2.0, seconds{1}, 1);
    CHECK(p.horizon() == milliseconds{0});
    CHECK(p.decide(failure(1)) == retry_decision::exhausted());
}

TEST_CASE("exponential gives up at once on a permanent failure", "[retry][exponential]") {
    const backoff::exponential p(milliseconds{100}, 2.0, seconds{1}, 5);
    CHECK(p.decide(failure(1, errc::payload_malformed)) == retry_decision::permanent_failure());
    CHECK(p.decide(failure(5, errc::payload_malformed)) == retry_decision::permanent_failure());
    const auto strict = backoff::exponential(milliseconds{100}, 2.0, seconds{1}, 5)
                            .with_classifier(backoff::classifier{}.permanent<std::domain_error>());
    attempt_failure f;
    f.exception = std::make_exception_ptr(std::domain_error("negative amount"));
    CHECK(strict.decide(f) == retry_decision::permanent_failure());
    f.exception = std::make_exception_ptr(std::runtime_error("timeout"));
    CHECK(strict.decide(f) == retry_decision::retry_after(milliseconds{100}));
}

TEST_CASE("exponential with jitter stays under the base delay and replays per message",
          "[retry][exponential]") {
    const auto p = backoff::exponential(milliseconds{100}, 2.0, seconds{10}, 12)
                       .with_jitter(backoff::jitter::full(2024));
    STATIC_REQUIRE(
        std::is_same_v<decltype(backoff::exponential(milliseconds{1}, 2.0, milliseconds{2}, 2)
                                    .with_jitter({})
                                    .with_classifier({})),
                       backoff::exponential>);
    milliseconds total{0};
    for (std::uint32_t a = 1; a < 12; ++a) {
        const auto d = p.decide(failure(a, errc::timed_out, "order-3"));
        REQUIRE(d.what == retry_decision::action::retry);
        REQUIRE(d.delay <= p.base_delay(a));
        REQUIRE(d.delay == p.delay(a, "order-3"));
        REQUIRE(d == p.decide(failure(a, errc::timed_out, "order-3")));
        total += d.delay;
    }
    CHECK(total <= p.horizon());
    CHECK(total < p.horizon()); // full jitter lowered at least one of 11 delays
    CHECK(p.get_jitter() == backoff::jitter::full(2024));

    const auto copy = p;
    CHECK(copy.decide(failure(5, errc::timed_out, "order-3")) ==
          p.decide(failure(5, errc::timed_out, "order-3")));
}

TEST_CASE("exponential refuses arguments outside their range", "[retry][exponential]") {
    using backoff_test::error_thrown_by;
    const auto nan = std::numeric_limits<double>::quiet_NaN();
    const auto inf = std::numeric_limits<double>::infinity();
    CHECK(error_thrown_by([] {
              (void)backoff::exponential(milliseconds{-1}, 2.0, seconds{1}, 3);
          }) == errc::invalid_argument);
    CHECK(error_thrown_by([] {
              (void)backoff::exponential(milliseconds{1}, 0.5, seconds{1}, 3);
          }) == errc::invalid_argument);
    CHECK(error_thrown_by([&] {
              (void)backoff::exponential(milliseconds{1}, nan, seconds{1}, 3);
          }) == errc::invalid_argument);
    CHECK(error_thrown_by([&] {
              (void)backoff::exponential(milliseconds{1}, inf, seconds{1}, 3);
          }) == errc::invalid_argument);
    CHECK(error_thrown_by([] { (void)backoff::exponential(seconds{2}, 2.0, seconds{1}, 3); }) ==
          errc::invalid_argument);
    CHECK(error_thrown_by([] {
              (void)backoff::exponential(milliseconds{1}, 2.0, seconds{1}, 0);
          }) == errc::invalid_argument);
    try {
        (void)backoff::exponential(seconds{2}, 2.0, seconds{1}, 3);
        FAIL("no exception");
    } catch (const letterbox::error& e) {
        CHECK(std::string(e.what()).find("cap must not be less than the initial delay") !=
              std::string::npos);
    }
    // The edges are allowed.
    CHECK(error_thrown_by([] {
              (void)backoff::exponential(milliseconds{0}, 1.0, milliseconds{0}, 1);
          }).value() == 0);
}

} // namespace unit_backoff_exponential
