// SPDX-License-Identifier: BSL-1.0

#include <letterbox/receive_endpoint.hpp>

#include <letterbox/backoff/exponential.hpp>
#include <letterbox/backoff/fixed.hpp>
#include <letterbox/backoff/immediate.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/innermost.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/typed_handler.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace unit_receive_endpoint {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;

// The one-thread world of the in-memory tests, with a transport on its broker.
struct world : test_support::simulation {
    letterbox::in_memory::transport transport{broker};
    letterbox::message_id_generator ids{17};

    template <class Endpoint, class Consumer>
    void start(const Endpoint& e, Consumer& c) {
        REQUIRE_FALSE(await([&](auto h) { e.async_declare(h); }));
        REQUIRE_FALSE(await2<std::string>([&](auto h) { c.async_start(h); }).first);
    }
    letterbox::message publish(std::string body) {
        letterbox::message m;
        m.id = ids();
        m.routing_key = "orders";
        m.body = std::move(body);
        m.properties.content_type = "application/json";
        REQUIRE_FALSE(await([&](auto h) { transport.async_publish(m, h); }));
        return m;
    }
};

struct order {
    int id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id)

} // namespace

TEST_CASE("receive_endpoint derives the topology from the queue and the redelivery policy",
          "[receive_endpoint]") {
    world w;
    const auto plain = letterbox::receive_endpoint(w.transport, w.clock, {.queue = "orders"});
    CHECK(plain.options().consumer_id == "orders"); // the queue's name by default
    CHECK(plain.topology().delays.empty());
    const auto e = plain.retry(letterbox::backoff::immediate(2))
                       .redelivery(letterbox::backoff::exponential(1s, 10.0, 10s, 3));
    CHECK(e.topology().delays == std::vector<std::chrono::milliseconds>{1s, 10s});
    std::vector<std::string> names;
    for (const auto& q : e.topology().queues())
        names.push_back(q.name);
    CHECK(names == std::vector<std::string>{"orders.retry.1000ms", "orders.retry.10000ms",
                                            "orders.dlq", "orders"});

    REQUIRE_FALSE(w.await([&](auto h) { e.async_declare(h); }));
    for (const auto& name : names)
        CHECK(w.broker.queue(name));
}

TEST_CASE("receive_endpoint runs retry, then redelivery, then dead-lettering, in that order",
          "[receive_endpoint]") {
    world w;
    const auto e = letterbox::receive_endpoint(w.transport, w.clock,
                                               {.queue = "orders", .consumer_id = "shipping"})
                       .retry(letterbox::backoff::immediate(2))
                       .redelivery(letterbox::backoff::fixed(1s, 2));
    int runs = 0;
    auto worker = e.consume([&](const letterbox::message&) {
        ++runs;
        throw std::runtime_error("warehouse down");
    });
    w.start(e, worker);
    w.publish(R"({"id": 1})");
    // Two runs at once, then the copy waits a second in orders.retry.1000ms.
    REQUIRE(w.drive_until([&] { return worker.stats().redelivered == 1; }));
    CHECK(runs == 2);
    CHECK(w.broker.queue("orders.retry.1000ms")->ready == 1);
    const auto redelivered_at = w.clock.now();
    REQUIRE(w.drive_until([&] { return worker.stats().dead_lettered == 1; }));
    CHECK(w.clock.now() - redelivered_at >= 1s);
    CHECK(runs == 4);
    CHECK(worker.stats().retried == 2);

    std::optional<letterbox::delivery> dead;
    w.transport.async_get("orders.dlq",
                          [&](std::error_code ec, std::optional<letterbox::delivery> d) {
                              REQUIRE_FALSE(ec);
                              dead = std::move(d);
                          });
    REQUIRE(w.drive_until([&] { return dead.has_value(); }));
    const auto& headers = dead->msg.headers;
    CHECK(headers.get<std::string>(letterbox::headers::consumer_id) == std::string("shipping"));
    CHECK(headers.get<std::string>(letterbox::headers::death_reason) ==
          std::string("retries-exhausted"));
}

TEST_CASE("receive_endpoint consumes with an inbox under its consumer id, and absorbs duplicates",
          "[receive_endpoint]") {
    world w;
    letterbox::in_memory_inbox_store inbox;
    const auto e = letterbox::receive_endpoint(w.transport, w.clock, {.queue = "orders"})
                       .redelivery(letterbox::backoff::fixed(1s, 3));
    std::vector<int> shipped;
    auto worker = e.consume(
        inbox, letterbox::typed<order>([&](const order& o, letterbox::in_memory_unit_of_work& u) {
            return u.on_commit([&shipped, id = o.id] { shipped.push_back(id); });
        }));
    w.start(e, worker);
    const auto m = w.publish(R"({"id": 4})");
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_publish(m, h); })); // a duplicate
    w.publish(R"({"sku": "none"})"); // does not decode: dead-lettered, never retried
    REQUIRE(w.drive_until(
        [&] { return worker.stats().acked == 2 && worker.stats().dead_lettered == 1; }));
    CHECK(shipped == std::vector<int>{4});
    CHECK(worker.stats().redelivered == 0);
    CHECK(letterbox::middleware::innermost(worker.handler()).stats().duplicates == 1);
    std::error_code ec;
    CHECK(inbox.contains("orders", m.id, ec));
}

TEST_CASE("receive_endpoint refuses a redelivery schedule longer than its inbox keeps records",
          "[receive_endpoint]") {
    world w;
    letterbox::in_memory_inbox_store inbox({.keep = std::chrono::hours(1)});
    const auto e = letterbox::receive_endpoint(w.transport, w.clock, {.queue = "orders"})
                       .redelivery(letterbox::backoff::fixed(std::chrono::hours(1), 3));
    auto effect = [](const letterbox::message&, letterbox::in_memory_unit_of_work&) {
    };
    try {
        (void)e.consume(inbox, effect);
        FAIL("a two-hour horizon passed a one-hour retention");
    } catch (const letterbox::error& err) {
        CHECK(err.code() == errc::dedup_window_too_short);
    }
}

TEST_CASE("receive_endpoint without a clock runs on the steady clock", "[receive_endpoint]") {
    boost::asio::io_context io;
    letterbox::in_memory::broker broker(io.get_executor());
    letterbox::in_memory::transport transport(broker);
    auto e = letterbox::receive_endpoint(transport, {.queue = "jobs"});
    static_assert(
        std::is_same_v<decltype(e), letterbox::receive_endpoint<letterbox::in_memory::transport>>);
    auto worker = e.consume([](const letterbox::message&) {});
    CHECK(worker.stats().delivered == 0);
}

} // namespace unit_receive_endpoint
