// SPDX-License-Identifier: BSL-1.0

// The dead-letter layer as a pure function: a delivery in, a disposition out, no broker.

#include <letterbox/middleware/dead_letter.hpp>

#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/virtual_clock.hpp>

#include "layer_fixture.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

namespace unit_middleware_dead_letter {

using namespace unit_middleware_layer_fixture;

// The layer makes its handler type, by `wrap` and by a call, at its stage.
static_assert(mw::dead_letter_layer<letterbox::virtual_clock>::stage == mw::stage::dead_letter);
static_assert(std::is_same_v<
              decltype(mw::dead_letter({}, std::declval<letterbox::virtual_clock&>())(flaky{})),
              mw::dead_letter_handler<letterbox::virtual_clock, flaky>>);
static_assert(std::is_same_v<decltype(mw::dead_letter({}, std::declval<letterbox::virtual_clock&>())
                                          .wrap(flaky{})),
                             mw::dead_letter_handler<letterbox::virtual_clock, flaky>>);

TEST_CASE("dead_letter publishes a copy with every fault header, then the consumer acks",
          "[middleware][dead_letter]") {
    letterbox::virtual_clock clock;
    int calls = 0;
    auto h = mw::dead_letter({.consumer_id = "billing-service"}, clock)(flaky{100, &calls});
    const auto d = make_delivery();
    auto r = h(handling{d});
    REQUIRE(r.what() == kind::forward);
    CHECK(r.why() == disposition::purpose::dead_letter);
    const auto& m = *r.forwarded();
    CHECK(m.id == d.msg.id);
    CHECK(m.exchange.empty());
    CHECK(m.routing_key == "billing.dlq");
    CHECK(m.headers.get<std::string>(headers::death_reason) == "handler-failed");
    CHECK(m.headers.get<std::string>(headers::exception_type) == "std::runtime_error");
    CHECK(m.headers.get<std::string>(headers::exception_message) == "database deadlock");
    CHECK(attempts_header(m) == 1);
    CHECK(m.headers.get<std::string>(headers::consumer_id) == "billing-service");
    CHECK(m.headers.get<std::string>(headers::original_queue) == "billing");
    CHECK(m.headers.get<std::string>(headers::original_exchange) == "orders");
    CHECK(m.headers.get<std::string>(headers::original_routing_key) == "orders.created");
    for (auto name :
         {headers::first_failure_time, headers::last_failure_time, headers::dead_lettered_time}) {
        const auto text = m.headers.get<std::string>(name);
        REQUIRE(text);
        CHECK(letterbox::detail::parse_rfc3339(*text));
    }
}

TEST_CASE("dead_letter native rejects, and lets store errors through to be requeued",
          "[middleware][dead_letter]") {
    letterbox::virtual_clock clock;
    auto native = mw::dead_letter({.strategy = mw::dead_letter_strategy::native},
                                  clock)(always_throws_malformed{});
    const auto d = make_delivery();
    auto r = native(handling{d});
    CHECK(r.what() == kind::reject);
    CHECK(r.failure()->reason == mw::death_reason::permanent_failure);

    auto busy = mw::dead_letter({}, clock)(
        [](const letterbox::message&) -> std::error_code { return errc::store_busy; });
    auto b = busy(handling{d});
    REQUIRE(b.failed());
    CHECK(b.failure()->error == errc::store_busy);
}

TEST_CASE("dead_letter on a quorum queue counts the delivery's returns into its attempts",
          "[middleware][dead_letter][quorum]") {
    letterbox::virtual_clock clock;
    int calls = 0;
    auto h = mw::dead_letter({}, clock)(flaky{100, &calls});
    auto d = make_delivery();
    d.msg.headers.set(headers::x_delivery_count, std::int64_t{2}); // crashed twice before
    auto r = h(handling{d});
    REQUIRE(r.what() == kind::forward);
    const auto& m = *r.forwarded();
    CHECK(attempts_header(m) == 3);
    CHECK_FALSE(m.headers.contains(headers::x_delivery_count));
}

} // namespace unit_middleware_dead_letter
