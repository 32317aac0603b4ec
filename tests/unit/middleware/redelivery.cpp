// SPDX-License-Identifier: BSL-1.0

// The redelivery layer as a pure function: a delivery in, a disposition out, no broker.

#include <letterbox/middleware/redelivery.hpp>

#include <letterbox/backoff/exponential.hpp>
#include <letterbox/backoff/fixed.hpp>
#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/virtual_clock.hpp>

#include "layer_fixture.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace unit_middleware_redelivery {

using namespace unit_middleware_layer_fixture;
namespace backoff = letterbox::backoff;

// The layer makes its handler type, by `wrap` and by a call, at its stage.
static_assert(mw::redelivery_layer<backoff::fixed, letterbox::virtual_clock>::stage ==
              mw::stage::redelivery);
static_assert(
    std::is_same_v<decltype(mw::redelivery(backoff::fixed(10s, 4), billing_topology(),
                                           std::declval<letterbox::virtual_clock&>())(flaky{})),
                   mw::redelivery_handler<backoff::fixed, letterbox::virtual_clock, flaky>>);
static_assert(
    std::is_same_v<decltype(mw::redelivery(backoff::fixed(10s, 4), billing_topology(),
                                           std::declval<letterbox::virtual_clock&>())
                                .wrap(flaky{})),
                   mw::redelivery_handler<backoff::fixed, letterbox::virtual_clock, flaky>>);

TEST_CASE("redelivery republishes a copy to the retry queue of the delay's level",
          "[middleware][redelivery]") {
    letterbox::virtual_clock clock;
    int calls = 0;
    auto h = mw::redelivery(backoff::fixed(10s, 4), billing_topology(), clock)(flaky{100, &calls});
    const auto d = make_delivery();
    auto r = h(handling{d});
    REQUIRE(r.what() == kind::forward);
    CHECK(r.why() == disposition::purpose::redeliver);
    const auto& copy = *r.forwarded();
    CHECK(copy.id == d.msg.id);
    CHECK(copy.body == d.msg.body);
    CHECK(copy.exchange.empty());
    CHECK(copy.routing_key == "billing.retry.10000ms");
    CHECK_FALSE(copy.properties.expiration);
    CHECK(attempts_header(copy) == 1);
    CHECK(copy.headers.get<std::string>(headers::original_exchange) == "orders");
    CHECK(copy.headers.get<std::string>(headers::original_routing_key) == "orders.created");
    CHECK(copy.headers.get<std::string>(headers::original_queue) == "billing");
    CHECK(copy.headers.get<std::string>(headers::exception_type) == "std::runtime_error");
    const auto first = copy.headers.get<std::string>(headers::first_failure_time);
    REQUIRE(first);
    CHECK(letterbox::detail::parse_rfc3339(*first) ==
          std::chrono::floor<std::chrono::milliseconds>(clock.wall_now()));

    SECTION("the second trip keeps where it was first consumed and counts on") {
        letterbox::delivery back = d;
        back.msg = copy;
        back.msg.exchange = ""; // dead-lettered back by the retry queue
        back.msg.routing_key = "billing";
        clock.advance_to(clock.now() + 10s);
        auto again = h(handling{back});
        REQUIRE(again.what() == kind::forward);
        const auto& copy2 = *again.forwarded();
        CHECK(attempts_header(copy2) == 2);
        CHECK(copy2.headers.get<std::string>(headers::original_exchange) == "orders");
        CHECK(copy2.headers.get<std::string>(headers::first_failure_time) == first);
        CHECK(copy2.headers.get<std::string>(headers::last_failure_time) != first);
    }
}

TEST_CASE("redelivery gives up when the attempts in the message reach the policy's maximum",
          "[middleware][redelivery]") {
    letterbox::virtual_clock clock;
    int calls = 0;
    auto h = mw::redelivery(backoff::fixed(10s, 4), billing_topology(), clock)(flaky{100, &calls});
    auto d = make_delivery();
    d.msg.headers.set(headers::attempts, std::int64_t{3});
    auto r = h(handling{d});
    REQUIRE(r.failed());
    CHECK(r.failure()->attempts == 4);
    CHECK(r.failure()->reason == mw::death_reason::retries_exhausted);
}

TEST_CASE("redelivery maps an exponential schedule onto its levels", "[middleware][redelivery]") {
    letterbox::virtual_clock clock;
    const auto policy = backoff::exponential(1s, 10.0, 60s, 4);
    letterbox::topology::retry_topology topo{.queue = "billing"};
    topo.delays = letterbox::topology::retry_topology::levels_of(policy);
    REQUIRE(topo.delays == std::vector<std::chrono::milliseconds>{1s, 10s, 60s});
    int calls = 0;
    auto h = mw::redelivery(policy, topo, clock)(flaky{100, &calls});
    for (std::int64_t before = 0; before < 3; ++before) {
        auto d = make_delivery();
        d.msg.headers.set(headers::attempts, before);
        auto r = h(handling{d});
        REQUIRE(r.what() == kind::forward);
        CHECK(r.forwarded()->routing_key == topo.retry_queue_name(topo.delays[before]));
    }
}

TEST_CASE("redelivery by reject counts the broker's x-death", "[middleware][redelivery]") {
    letterbox::virtual_clock clock;
    auto topo = billing_topology();
    topo.rejects = letterbox::topology::rejects_go_to::retry_queue;
    int calls = 0;
    auto h = mw::redelivery(backoff::fixed(1s, 3), topo, clock,
                            mw::redelivery_via::reject)(flaky{100, &calls});
    auto d = make_delivery();
    CHECK(h(handling{d}).what() == kind::reject);
    letterbox::field_table death{{"count", std::int64_t{2}},
                                 {"reason", std::string("rejected")},
                                 {"queue", std::string("billing")}};
    d.msg.headers.set(headers::x_death, letterbox::field_array{death});
    auto r = h(handling{d});
    REQUIRE(r.failed());
    CHECK(r.failure()->attempts == 3);
}

TEST_CASE("on a quorum queue a returned delivery counts its returns, and its copy does not "
          "carry them on",
          "[middleware][redelivery][quorum]") {
    letterbox::virtual_clock clock;
    auto topo = billing_topology();
    topo.quorum = letterbox::topology::quorum_options{};
    int calls = 0;
    auto h = mw::redelivery(backoff::fixed(10s, 6), topo, clock)(flaky{100, &calls});
    auto d = make_delivery();
    d.msg.headers.set(headers::attempts, std::int64_t{2});
    d.msg.headers.set(headers::x_delivery_count, std::int64_t{1}); // one crash since
    auto r = h(handling{d});
    REQUIRE(r.what() == kind::forward);
    REQUIRE(r.failure());
    CHECK(r.failure()->attempts == 4);
    const auto& copy = *r.forwarded();
    CHECK(attempts_header(copy) == 4);
    // A quorum queue leaves a publisher's x-delivery-count on a first delivery: kept, it
    // would count the crash a second time.
    CHECK_FALSE(copy.headers.contains(headers::x_delivery_count));
    SECTION("and the crashes count toward the policy's maximum") {
        d.msg.headers.set(headers::x_delivery_count, std::int64_t{3});
        auto last = h(handling{d});
        REQUIRE(last.failed());
        CHECK(last.failure()->attempts == 6);
        CHECK(last.failure()->reason == mw::death_reason::retries_exhausted);
    }
}

TEST_CASE("a redelivery layer refuses a quorum topology RabbitMQ would misread",
          "[middleware][redelivery][quorum]") {
    letterbox::virtual_clock clock;
    auto topo = billing_topology();
    topo.quorum = letterbox::topology::quorum_options{.delivery_limit = -1};
    CHECK_THROWS_AS(mw::redelivery(backoff::fixed(10s, 4), topo, clock), letterbox::error);
}

} // namespace unit_middleware_redelivery
