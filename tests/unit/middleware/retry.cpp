// SPDX-License-Identifier: BSL-1.0

// The retry layer as a pure function: a delivery in, a disposition out, no broker.

#include <letterbox/middleware/retry.hpp>

#include <letterbox/backoff/fixed.hpp>
#include <letterbox/backoff/immediate.hpp>

#include "layer_fixture.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <type_traits>

namespace unit_middleware_retry {

using namespace unit_middleware_layer_fixture;
namespace backoff = letterbox::backoff;

// The layer makes its handler type, by `wrap` and by a call, at its stage.
static_assert(mw::retry_layer<backoff::immediate>::stage == mw::stage::retry);
static_assert(std::is_same_v<decltype(mw::retry(backoff::immediate(3))(flaky{})),
                             mw::retry_handler<backoff::immediate, flaky>>);
static_assert(std::is_same_v<decltype(mw::retry(backoff::immediate(3)).wrap(flaky{})),
                             mw::retry_handler<backoff::immediate, flaky>>);

TEST_CASE("retry runs the handler again at once until it succeeds", "[middleware][retry]") {
    int calls = 0;
    auto h = mw::retry(backoff::immediate(3))(flaky{2, &calls});
    const auto d = make_delivery();
    auto r = h(handling{d});
    CHECK(r.what() == kind::ack);
    CHECK(calls == 3);
    CHECK(h.retried() == 2);
}

TEST_CASE("retry gives up after max attempts with the reason retries-exhausted",
          "[middleware][retry]") {
    int calls = 0;
    auto h = mw::retry(backoff::immediate(3))(flaky{100, &calls});
    const auto d = make_delivery();
    auto r = h(handling{d});
    REQUIRE(r.failed());
    CHECK(calls == 3);
    CHECK(r.failure()->reason == mw::death_reason::retries_exhausted);
    CHECK_FALSE(r.failure()->permanent);
    CHECK(r.failure()->exception_type == "std::runtime_error");
    CHECK(r.failure()->exception_message == "database deadlock");
}

TEST_CASE("retry never retries a permanent failure", "[middleware][retry]") {
    auto h = mw::retry(backoff::immediate(5))(always_throws_malformed{});
    const auto d = make_delivery();
    auto r = h(handling{d});
    REQUIRE(r.failed());
    CHECK(r.failure()->permanent);
    CHECK(r.failure()->error == errc::payload_malformed);
    CHECK(r.failure()->reason == mw::death_reason::permanent_failure);
    CHECK(h.retried() == 0);
}

TEST_CASE("retry with a delay hands the wait to the consumer, and continues from the run",
          "[middleware][retry]") {
    int calls = 0;
    auto h = mw::retry(backoff::fixed(200ms, 3))(flaky{100, &calls});
    const auto d = make_delivery();
    auto first = h(handling{d, 1});
    REQUIRE(first.what() == kind::retry_in);
    CHECK(first.delay() == 200ms);
    auto second = h(handling{d, 2});
    REQUIRE(second.what() == kind::retry_in);
    auto third = h(handling{d, 3});
    REQUIRE(third.failed());
    CHECK(third.failure()->reason == mw::death_reason::retries_exhausted);
    CHECK(calls == 3);
}

} // namespace unit_middleware_retry
