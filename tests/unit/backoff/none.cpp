// SPDX-License-Identifier: BSL-1.0

#include <letterbox/backoff/none.hpp>

#include "support.hpp"

#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <exception>
#include <stdexcept>
#include <type_traits>

namespace unit_backoff_none {

namespace {

using namespace backoff_test;

} // namespace

static_assert(letterbox::retry_policy<backoff::none>);

TEST_CASE("none allows one attempt and schedules nothing", "[retry][none]") {
    const backoff::none p;
    CHECK(p.max_attempts() == 1);
    CHECK(p.horizon() == milliseconds{0});
    CHECK(p.base_delay(1) == milliseconds{0});
    CHECK(p.delay(1, "m-1") == milliseconds{0});
}

TEST_CASE("none gives up after a transient failure: the attempts ran out", "[retry][none]") {
    const backoff::none p;
    CHECK(p.decide(failure(1)) == retry_decision::exhausted());
    CHECK(p.decide(failure(2)) == retry_decision::exhausted());
}

TEST_CASE("none gives up after a permanent failure, saying it was permanent", "[retry][none]") {
    const backoff::none p;
    CHECK(p.decide(failure(1, errc::payload_malformed)) == retry_decision::permanent_failure());
}

TEST_CASE("none uses the classifier it is given", "[retry][none]") {
    const auto p =
        backoff::none{}.with_classifier(backoff::classifier{}.permanent<std::invalid_argument>());
    STATIC_REQUIRE(std::is_same_v<decltype(backoff::none{}.with_classifier({})), backoff::none>);
    attempt_failure f;
    f.exception = std::make_exception_ptr(std::invalid_argument("bad id"));
    CHECK(p.decide(f) == retry_decision::permanent_failure());
    f.exception = std::make_exception_ptr(std::runtime_error("timeout"));
    CHECK(p.decide(f) == retry_decision::exhausted());

    backoff::none q;
    CHECK(&q.with_classifier(backoff::classifier{}.permanent(errc::timed_out)) == &q);
    CHECK(q.decide(failure(1)) == retry_decision::permanent_failure());
    CHECK(q.get_classifier().is_permanent(failure(1)));
}

} // namespace unit_backoff_none
