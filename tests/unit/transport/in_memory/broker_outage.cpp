// SPDX-License-Identifier: BSL-1.0
// The broker-outage fault (broker::go_down / come_back) and how in_memory::transport lives
// through it: operations fail promptly with connection_closed, nothing is lost, consumers come
// back by themselves, and nothing spins while the broker is unreachable.

#include <letterbox/transport/in_memory/broker.hpp>

#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "scenario_fixture.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_transport_in_memory_broker_outage {

using namespace broker_scenarios;

namespace {

/// A transport on a broker, on a single-threaded io_context and a virtual clock. Nothing here
/// waits for real time: `run` executes what is ready, and fails the test if that never ends.
struct outage_world {
    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    in_memory::broker broker{io.get_executor(), clock};
    letterbox::in_memory::transport transport{broker, "outage"};
    letterbox::message_id_generator ids{7};

    /// Runs every ready handler and those they post; returns how many ran. A spinning model
    /// would exceed the bound and fail the test instead of hanging it.
    std::size_t run(std::size_t bound = 10'000) {
        io.restart();
        std::size_t n = 0;
        while (n < bound && io.poll_one() != 0)
            ++n;
        REQUIRE(n < bound);
        return n;
    }

    std::error_code await(const std::function<void(std::function<void(std::error_code)>)>& op) {
        std::optional<std::error_code> result;
        op([&result](std::error_code ec) { result = ec; });
        run();
        REQUIRE(result.has_value());
        return *result;
    }

    letterbox::message message_to(const std::string& queue, std::string body) {
        letterbox::message m;
        m.id = ids();
        m.routing_key = queue;
        m.body = std::move(body);
        return m;
    }

    std::error_code publish(const std::string& queue, std::string body) {
        auto m = message_to(queue, std::move(body));
        return await([&](auto done) { transport.async_publish(m, done); });
    }

    void declare_queue(const std::string& name) {
        letterbox::topology::queue q;
        q.name = name;
        REQUIRE_FALSE(await([&](auto done) { transport.async_declare(q, done); }));
    }
};

} // namespace

TEST_CASE("while the broker is down, connections are refused and the broker keeps its state",
          "[transport][in_memory][outage]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    fx.publish("Q", {"m1", "m2"});
    recorder r;
    std::error_code ec;
    auto consumer_ch = fx.open_channel();
    REQUIRE_FALSE(consumer_ch.basic_qos(1));
    consumer_ch.basic_consume("Q", r.on_delivery(), ec);
    REQUIRE_FALSE(ec);
    REQUIRE(r.deliveries.size() == 1);
    std::vector<in_memory::close_reason> closed;
    fx.conn.on_close([&](const in_memory::close_reason& why) { closed.push_back(why); });

    CHECK_FALSE(fx.broker.is_down());
    fx.broker.go_down();

    CHECK(fx.broker.is_down());
    REQUIRE(closed.size() == 1);
    CHECK(closed[0].code == errc::connection_forced);
    CHECK(closed[0].text == "CONNECTION_FORCED - broker unreachable (fault injection)");
    CHECK(fx.broker.connection_count() == 0);
    // The unacknowledged delivery went back to its queue; nothing was dropped.
    CHECK(fx.count("Q") == tru(2, 2, 0));
    CHECK(fx.broker.counters().dropped_total() == 0);

    auto refused = fx.broker.connect("during the outage");
    CHECK_FALSE(refused.is_open());
    CHECK(refused.close_reason().code == errc::connection_closed);
    auto ch = refused.open_channel();
    CHECK_FALSE(ch.is_open());
    CHECK(ch.basic_publish(make_message("", "Q", "lost")) == errc::connection_closed);
    CHECK(fx.broker.connection_count() == 0);
    CHECK(fx.broker.refused_connections() == 1);

    fx.broker.go_down(); // idempotent
    CHECK(fx.broker.refused_connections() == 1);

    fx.broker.come_back();
    CHECK_FALSE(fx.broker.is_down());
    auto conn = fx.broker.connect("after");
    REQUIRE(conn.is_open());
    CHECK(fx.broker.connection_count() == 1);
    auto ch2 = conn.open_channel();
    std::vector<std::string> bodies;
    for (int i = 0; i < 2; ++i) {
        auto d = ch2.basic_get("Q", ec, true);
        REQUIRE_FALSE(ec);
        REQUIRE(d);
        bodies.push_back(body_of(*d));
    }
    CHECK(bodies == std::vector<std::string>{"m1", "m2"});
    CHECK(fx.broker.refused_connections() == 1);
}

TEST_CASE("messages with a TTL still expire while the broker is down",
          "[transport][in_memory][outage]") {
    broker_fixture fx;
    topology::queue_arguments args;
    args.message_ttl = 1000ms;
    fx.declare_queue("Q", args);
    fx.publish("Q", "short-lived");
    fx.broker.go_down();
    fx.advance(2s);
    fx.broker.come_back();
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.broker.counters().discarded_of(in_memory::dead_letter_reason::expired) == 1);
}

TEST_CASE("async_wait_up completes at once when up, and on come_back when down",
          "[transport][in_memory][outage]") {
    broker_fixture fx;
    int up = 0;
    fx.broker.async_wait_up([&](std::error_code ec) { up += ec ? 100 : 1; });
    CHECK(up == 0); // posted, never inline
    fx.run();
    CHECK(up == 1);

    fx.broker.go_down();
    fx.broker.async_wait_up([&](std::error_code ec) { up += ec ? 100 : 1; });
    fx.broker.async_wait_up([&](std::error_code ec) { up += ec ? 100 : 1; });
    fx.run();
    fx.advance(1h);
    CHECK(up == 1);
    fx.broker.come_back();
    CHECK(up == 1); // posted to the executor
    fx.run();
    CHECK(up == 3);
    fx.broker.come_back(); // nothing left to run
    fx.run();
    CHECK(up == 3);
}

TEST_CASE("during an outage in_memory::transport fails operations promptly with connection_closed",
          "[transport][in_memory][outage]") {
    outage_world w;
    w.declare_queue("q");
    REQUIRE_FALSE(w.publish("q", "before"));

    w.broker.go_down();
    w.run();
    const auto refused_after_loss = w.broker.refused_connections();
    CHECK(refused_after_loss == 1); // the automatic reconnect, once

    CHECK(w.publish("q", "during") == errc::connection_closed);
    letterbox::topology::queue q2;
    q2.name = "q2";
    CHECK(w.await([&](auto done) { w.transport.async_declare(q2, done); }) ==
          errc::connection_closed);
    std::optional<std::error_code> consumed;
    letterbox::consume_options o;
    o.queue = "q";
    w.transport.async_consume(
        o, [](letterbox::delivery) {}, [&](std::error_code ec, std::string) { consumed = ec; });
    w.run();
    REQUIRE(consumed);
    CHECK(*consumed == errc::connection_closed);
    // One connection attempt per operation, and nothing in between: no spinning.
    CHECK(w.broker.refused_connections() == refused_after_loss + 3);
    CHECK(w.run() == 0);
    w.clock.advance(1h);
    CHECK(w.run() == 0);
    CHECK(w.broker.refused_connections() == refused_after_loss + 3);

    w.broker.come_back();
    w.run();
    CHECK(w.broker.connection_count() == 1); // reconnected without an operation
    CHECK_FALSE(w.publish("q", "after"));
    CHECK(w.broker.queue("q")->ready == 2); // "before" survived the outage
    CHECK_FALSE(w.broker.queue("q2"));
}

TEST_CASE("a consumer resumes receiving after the broker comes back",
          "[transport][in_memory][outage]") {
    outage_world w;
    w.declare_queue("q");
    std::vector<letterbox::delivery> got;
    std::optional<std::error_code> consumed;
    std::string tag;
    letterbox::consume_options o;
    o.queue = "q";
    w.transport.async_consume(
        o, [&](letterbox::delivery d) { got.push_back(std::move(d)); },
        [&](std::error_code ec, std::string t) {
            consumed = ec;
            tag = std::move(t);
        });
    w.run();
    REQUIRE(consumed);
    REQUIRE_FALSE(*consumed);
    REQUIRE_FALSE(w.publish("q", "first"));
    REQUIRE(got.size() == 1); // held, not acknowledged

    w.broker.go_down();
    w.run();
    CHECK(w.broker.queue("q")->ready == 1); // requeued by the broker
    CHECK(w.await([&](auto done) { w.transport.async_ack(got[0], done); }) == errc::channel_closed);
    CHECK(w.publish("q", "during") == errc::connection_closed);
    w.clock.advance(10min);
    w.run();
    CHECK(got.size() == 1);

    w.broker.come_back();
    w.run();
    // The consumer was restored by itself: the held message comes back, marked redelivered.
    REQUIRE(got.size() == 2);
    CHECK(got[1].msg.body == "first");
    CHECK(got[1].redelivered);
    CHECK(got[1].consumer_tag == tag);
    CHECK_FALSE(w.await([&](auto done) { w.transport.async_ack(got[1], done); }));

    REQUIRE_FALSE(w.publish("q", "second"));
    REQUIRE(got.size() == 3);
    CHECK(got[2].msg.body == "second");
    CHECK_FALSE(got[2].redelivered);
    CHECK_FALSE(w.await([&](auto done) { w.transport.async_ack(got[2], done); }));
    CHECK(w.broker.queue("q")->total() == 0);
}

TEST_CASE("a transport created while the broker is down connects when it comes back",
          "[transport][in_memory][outage]") {
    outage_world w;
    w.declare_queue("q");
    w.broker.go_down();
    letterbox::in_memory::transport late(w.broker, "late");
    w.run();
    CHECK(w.broker.connection_count() == 0);
    letterbox::message m = w.message_to("q", "x");
    CHECK(w.await([&](auto done) { late.async_publish(m, done); }) == errc::connection_closed);
    w.broker.come_back();
    w.run();
    CHECK(w.broker.connection_count() == 2);
    CHECK_FALSE(w.await([&](auto done) { late.async_publish(m, done); }));
    CHECK(w.broker.queue("q")->ready == 1);
}

TEST_CASE("a transport closed during the outage stays closed when the broker comes back",
          "[transport][in_memory][outage]") {
    outage_world w;
    w.declare_queue("q");
    w.broker.go_down();
    w.run();
    CHECK_FALSE(w.await([&](auto done) { w.transport.async_close(done); }));
    w.broker.come_back();
    w.run();
    CHECK(w.broker.connection_count() == 0);
    CHECK(w.publish("q", "x") == errc::closed);
}

} // namespace unit_transport_in_memory_broker_outage
