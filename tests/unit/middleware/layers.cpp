// SPDX-License-Identifier: BSL-1.0

// The middleware layers as pure functions: a delivery in, a disposition out, no broker.

#include <letterbox/middleware/attempts_before.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/middleware/retry.hpp>

#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/retry/exponential.hpp>
#include <letterbox/retry/fixed.hpp>
#include <letterbox/retry/immediate.hpp>
#include <letterbox/retry/none.hpp>
#include <letterbox/virtual_clock.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

namespace unit_middleware_layers {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
using letterbox::middleware::disposition;
using letterbox::middleware::handling;
namespace headers = letterbox::headers;
namespace mw = letterbox::middleware;
namespace retry = letterbox::retry;

using kind = disposition::kind;

letterbox::delivery make_delivery() {
    static letterbox::message_id_generator ids(7); // test-local state, never shared
    letterbox::delivery d;
    d.msg.id = ids();
    d.msg.exchange = "orders";
    d.msg.routing_key = "orders.created";
    d.msg.body = R"({"order":1})";
    d.queue = "billing";
    d.delivery_tag = 1;
    return d;
}

// Fails the first `failures` calls (throwing `E`), then succeeds.
struct flaky {
    int failures = 0;
    int* calls = nullptr;
    void operator()(const letterbox::message&) {
        ++*calls;
        if (*calls <= failures)
            throw std::runtime_error("database deadlock");
    }
};

struct always_throws_malformed {
    void operator()(const letterbox::message&) const {
        throw letterbox::error(errc::payload_malformed, "field 'amount' missing");
    }
};

letterbox::topology::retry_topology billing_topology() {
    return {.queue = "billing", .delays = {1s, 10s, 60s}};
}

std::int64_t attempts_header(const letterbox::message& m) {
    return m.headers.find(headers::attempts)->as_integer().value();
}

} // namespace

TEST_CASE("retry runs the handler again at once until it succeeds", "[middleware][retry]") {
    int calls = 0;
    auto h = mw::retry(retry::immediate(3))(flaky{2, &calls});
    const auto d = make_delivery();
    auto r = h(handling{d});
    CHECK(r.what() == kind::ack);
    CHECK(calls == 3);
    CHECK(h.retried() == 2);
}

TEST_CASE("retry gives up after max attempts with the reason retries-exhausted",
          "[middleware][retry]") {
    int calls = 0;
    auto h = mw::retry(retry::immediate(3))(flaky{100, &calls});
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
    auto h = mw::retry(retry::immediate(5))(always_throws_malformed{});
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
    auto h = mw::retry(retry::fixed(200ms, 3))(flaky{100, &calls});
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

TEST_CASE("redelivery republishes a copy to the retry queue of the delay's level",
          "[middleware][redelivery]") {
    letterbox::virtual_clock clock;
    int calls = 0;
    auto h = mw::redelivery(retry::fixed(10s, 4), billing_topology(), clock)(flaky{100, &calls});
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
    auto h = mw::redelivery(retry::fixed(10s, 4), billing_topology(), clock)(flaky{100, &calls});
    auto d = make_delivery();
    d.msg.headers.set(headers::attempts, std::int64_t{3});
    auto r = h(handling{d});
    REQUIRE(r.failed());
    CHECK(r.failure()->attempts == 4);
    CHECK(r.failure()->reason == mw::death_reason::retries_exhausted);
}

TEST_CASE("redelivery maps an exponential schedule onto its levels", "[middleware][redelivery]") {
    letterbox::virtual_clock clock;
    const auto policy = retry::exponential(1s, 10.0, 60s, 4);
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
    auto h = mw::redelivery(retry::fixed(1s, 3), topo, clock,
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

TEST_CASE("attempts_before reads letterbox's header, x-death and x-delivery-count",
          "[middleware][attempts]") {
    auto d = make_delivery();
    CHECK(mw::attempts_before(d) == 0);
    d.msg.headers.set(headers::attempts, std::int64_t{2});
    CHECK(mw::attempts_before(d) == 2);
    d.msg.headers.set(headers::x_delivery_count, std::int64_t{5});
    CHECK(mw::attempts_before(d) == 5);
    letterbox::field_table other_queue{{"count", std::int64_t{9}},
                                       {"reason", std::string("rejected")},
                                       {"queue", std::string("elsewhere")}};
    letterbox::field_table expired{{"count", std::int64_t{9}},
                                   {"reason", std::string("expired")},
                                   {"queue", std::string("billing")}};
    d.msg.headers.set(headers::x_death, letterbox::field_array{other_queue, expired});
    CHECK(mw::attempts_before(d) == 5); // neither is a rejection from this queue
    SECTION("malformed values count as nothing") {
        d.msg.headers.set(headers::attempts, std::string("many"));
        d.msg.headers.set(headers::x_delivery_count, std::int64_t{-4});
        d.msg.headers.set(headers::x_death, std::string("not an array"));
        CHECK(mw::attempts_before(d) == 0);
    }
}

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

TEST_CASE("compose puts the layers in the documented order whatever the argument order",
          "[middleware][compose]") {
    letterbox::virtual_clock clock;
    auto dl = mw::dead_letter({}, clock);
    auto rd = mw::redelivery(retry::fixed(10s, 3), billing_topology(), clock);
    auto rt = mw::retry(retry::immediate(2));
    int calls_a = 0, calls_b = 0;
    auto a = mw::compose(flaky{100, &calls_a}, dl, rd, rt);
    auto b = mw::compose(flaky{100, &calls_b}, rt, dl, rd);
    static_assert(std::is_same_v<decltype(a), decltype(b)>);
    auto d = make_delivery();
    // First delivery: two in-process runs, then a redelivery.
    auto ra = a(handling{d});
    CHECK(ra.what() == kind::forward);
    CHECK(ra.why() == disposition::purpose::redeliver);
    CHECK(calls_a == 2);
    // Third delivery: the redelivery gives up, the dead-letter layer takes it.
    d.msg.headers.set(headers::attempts, std::int64_t{2});
    auto rb = b(handling{d});
    REQUIRE(rb.what() == kind::forward);
    CHECK(rb.why() == disposition::purpose::dead_letter);
    CHECK(rb.forwarded()->headers.get<std::string>(headers::death_reason) == "retries-exhausted");
    CHECK(attempts_header(*rb.forwarded()) == 3);
}

TEST_CASE("compose sends a permanent failure straight to the dead-letter path",
          "[middleware][compose]") {
    letterbox::virtual_clock clock;
    auto h = mw::compose(always_throws_malformed{}, mw::dead_letter({}, clock),
                         mw::redelivery(retry::fixed(10s, 5), billing_topology(), clock),
                         mw::retry(retry::immediate(5)));
    const auto d = make_delivery();
    auto r = h(handling{d});
    REQUIRE(r.what() == kind::forward);
    CHECK(r.why() == disposition::purpose::dead_letter);
    CHECK(r.forwarded()->headers.get<std::string>(headers::death_reason) == "permanent-failure");
    CHECK(attempts_header(*r.forwarded()) == 1);
}

namespace {
// A handler that declares an inbox retention, as `idempotent(...).with_retention` does.
struct remembering_handler {
    std::chrono::milliseconds kept;
    void operator()(const letterbox::message&) const {}
    std::optional<std::chrono::milliseconds> retention() const { return kept; }
};
} // namespace

TEST_CASE("compose refuses an inbox retention shorter than the redelivery horizon, naming both",
          "[middleware][compose][dedup_window]") {
    letterbox::virtual_clock clock;
    // Broker: 1m + 10m + 1h; in-process: 2 x 1s per delivery, 4 deliveries.
    auto rd = mw::redelivery(retry::exponential(1min, 10.0, 1h, 4), billing_topology(), clock);
    auto rt = mw::retry(retry::fixed(1s, 3));
    REQUIRE(mw::redelivery_horizon(rd, rt) == 1min + 10min + 1h + 4 * 2s);
    try {
        (void)mw::compose(remembering_handler{30min}, rd, rt);
        FAIL("a 30 minute retention was accepted");
    } catch (const letterbox::error& e) {
        CHECK(e.code() == errc::dedup_window_too_short);
        const std::string text = e.what();
        CHECK_THAT(text, Catch::Contains("30m"));
        CHECK_THAT(text, Catch::Contains("1h 11m"));
    }
    CHECK_THROWS_AS(mw::compose_in_order(remembering_handler{30min}, rd, rt), letterbox::error);
    CHECK_NOTHROW(mw::compose(remembering_handler{2h}, rd, rt));
    CHECK_NOTHROW(mw::compose(remembering_handler{1s})); // no redelivery, nothing to check
}

TEST_CASE("compose checks the retention declared on an idempotent handler",
          "[middleware][compose][dedup_window]") {
    letterbox::virtual_clock clock;
    letterbox::in_memory_inbox_store inbox;
    auto h = letterbox::idempotent(
        [](const letterbox::message&, letterbox::in_memory_unit_of_work&) {}, inbox,
        [] { return letterbox::in_memory_unit_of_work{}; }, "billing", clock);
    CHECK_FALSE(h.retention());
    auto rd = mw::redelivery(retry::fixed(1h, 25), billing_topology(), clock); // 24h horizon
    CHECK_THROWS_WITH(mw::compose(h.with_retention(12h), mw::dead_letter({}, clock), rd),
                      Catch::Contains("inbox retention 12h") && Catch::Contains("1d"));
    CHECK_NOTHROW(mw::compose(h.with_retention(7 * 24h), mw::dead_letter({}, clock), rd));
}

TEST_CASE("compose_in_order keeps the given order", "[middleware][compose]") {
    letterbox::virtual_clock clock;
    int calls = 0;
    // Dead-letter inside retry: each in-process run dead-letters at once, so retry never sees
    // a failure: the order matters, and compose_in_order honours it.
    auto h = mw::compose_in_order(flaky{100, &calls}, mw::retry(retry::immediate(3)),
                                  mw::dead_letter({}, clock));
    const auto d = make_delivery();
    auto r = h(handling{d});
    CHECK(r.what() == kind::forward);
    CHECK(calls == 1);
}

TEST_CASE("retry_topology declares retry queues that dead-letter back, and the DLQ",
          "[middleware][topology]") {
    auto topo = billing_topology();
    topo.rejects = letterbox::topology::rejects_go_to::dead_letter_queue;
    const auto qs = topo.queues();
    REQUIRE(qs.size() == 5);
    CHECK(qs[0].name == "billing.retry.1000ms");
    std::error_code ec;
    std::string why;
    auto args = letterbox::topology::queue_arguments::parse(qs[0].arguments, ec, why);
    REQUIRE(args);
    CHECK(args->message_ttl == 1s);
    CHECK(args->dead_letter_exchange == "");
    CHECK(args->dead_letter_routing_key == "billing");
    CHECK(qs[3].name == "billing.dlq");
    CHECK(qs[4].name == "billing");
    auto work = letterbox::topology::queue_arguments::parse(qs[4].arguments, ec, why);
    REQUIRE(work);
    CHECK(work->dead_letter_routing_key == "billing.dlq");
    CHECK(topo.level_for(5s) == 10s);
    CHECK(topo.level_for(2h) == 60s);
}

} // namespace unit_middleware_layers
