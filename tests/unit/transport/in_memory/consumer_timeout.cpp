// SPDX-License-Identifier: BSL-1.0
// The consumer (delivery acknowledgement) timeout in the RabbitMQ model: which channel closes,
// when (the channel's tick), with which reply, and what becomes of its deliveries; then a
// letterbox consumer that outlives the close with its effect applied once. What 3.10.8 does was
// read in rabbit_channel.erl and seen on a real broker by tests/integration/amqp_differential.cpp
// (consumer_timeout); docs/in-memory-transport.md §2.18.

#include <letterbox/transport/in_memory/broker.hpp>

#include <letterbox/consumer.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/after_call.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/testing/simulation.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "scenario_fixture.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_transport_in_memory_consumer_timeout {

using namespace broker_scenarios;

namespace {

/// A one-second timeout checked every half second (the defaults: 30 minutes, every minute).
in_memory::broker_profile short_timeout(std::chrono::milliseconds timeout = 1000ms,
                                        std::chrono::milliseconds tick = 500ms) {
    auto p = in_memory::broker_profile::rabbitmq_3_10();
    p.consumer_timeout = timeout;
    p.channel_tick_interval = tick;
    return p;
}

std::string timeout_text(int channel, int ms) {
    return "PRECONDITION_FAILED - delivery acknowledgement on channel " + std::to_string(channel) +
           " timed out. Timeout value used: " + std::to_string(ms) +
           " ms. This timeout value can be configured, see consumers doc guide to learn more";
}

/// A consumer on its own channel, opened now.
struct consumer_on_channel {
    in_memory::channel ch;
    recorder r;
};

void consume(consumer_on_channel& c, const std::string& queue, bool no_ack = false) {
    REQUIRE_FALSE(c.ch.basic_qos(10));
    std::error_code ec;
    in_memory::basic_consume_options o;
    o.no_ack = no_ack;
    c.ch.basic_consume(queue, c.r.on_delivery(), ec, o);
    REQUIRE_FALSE(ec);
}

} // namespace

TEST_CASE("consumer timeout: a delivery left unacknowledged past it closes its channel with 406 "
          "at the next tick, and the channel's deliveries come back in order, redelivered",
          "[transport][in_memory][consumer_timeout]") {
    const auto type = GENERATE(topology::queue_type::classic, topology::queue_type::quorum);
    CAPTURE(type);
    broker_fixture fx(short_timeout());
    topology::queue_arguments args;
    args.type = type;
    fx.declare_queue("work", args);
    consumer_on_channel c{fx.open_channel(), {}}; // channel 2, opened at 0: ticks every 500 ms
    REQUIRE(c.ch.number() == 2);
    consume(c, "work");
    fx.advance(200ms);
    fx.publish("work", {"m1", "m2", "m3"}); // delivered at 200: the deadline is 1200
    REQUIRE(c.r.bodies() == std::vector<std::string>{"m1", "m2", "m3"});
    REQUIRE_FALSE(c.ch.basic_ack(c.r.deliveries[1].delivery_tag));

    fx.advance(1299ms); // the ticks at 500 and 1000 came before the deadline
    CHECK(c.ch.is_open());
    fx.advance(1ms); // the tick at 1500
    REQUIRE_FALSE(c.ch.is_open());
    CHECK(c.ch.close_reason().code == make_error_code(errc::precondition_failed));
    CHECK(c.ch.close_reason().text == timeout_text(2, 1000));
    CHECK(fx.ch.is_open()); // only that channel: the connection and its other channels go on
    CHECK(fx.conn.is_open());

    const auto back = fx.drain_deliveries("work");
    REQUIRE(back.size() == 2);
    CHECK(body_of(back[0]) == "m1");
    CHECK(body_of(back[1]) == "m3");
    CHECK(back[0].redelivered);
    CHECK(back[1].redelivered);
    if (type == topology::queue_type::quorum) // a closed channel's return counts (§2.6)
        CHECK(back[0].msg->headers.find("x-delivery-count")->get_if<std::int64_t>() != nullptr);
    CHECK(fx.clock.pending() == 0); // the closed channel's timer is gone
}

TEST_CASE("consumer timeout: the oldest unacknowledged delivery decides, and a tick on the "
          "deadline itself does not close",
          "[transport][in_memory][consumer_timeout]") {
    broker_fixture fx(short_timeout());
    fx.declare_queue("work");
    consumer_on_channel c{fx.open_channel(), {}};
    consume(c, "work");
    fx.publish("work", "l1"); // delivered at 0: the deadline 1000 is a tick

    SECTION("the tick on the deadline keeps the channel, the next one closes it") {
        fx.advance(1499ms);
        CHECK(c.ch.is_open());
        fx.advance(1ms);
        CHECK_FALSE(c.ch.is_open());
    }
    SECTION("once the oldest is acknowledged, the next one's deadline counts") {
        fx.advance(700ms);
        fx.publish("work", "l2"); // delivered at 700: the deadline is 1700
        fx.advance(200ms);
        REQUIRE_FALSE(c.ch.basic_ack(c.r.deliveries[0].delivery_tag));
        fx.advance(1099ms); // 1999: the ticks at 1500 came before l2's deadline
        CHECK(c.ch.is_open());
        fx.advance(1ms);
        REQUIRE_FALSE(c.ch.is_open());
        CHECK(fx.drain("work") == std::vector<std::string>{"l2"});
    }
}

TEST_CASE("consumer timeout: no-ack consumers and no-ack gets never time out, a get with manual "
          "acknowledgement does",
          "[transport][in_memory][consumer_timeout]") {
    broker_fixture fx(short_timeout());
    fx.declare_queue("a");
    fx.declare_queue("b");
    consumer_on_channel auto_ack{fx.open_channel(), {}}; // 2
    consume(auto_ack, "a", true);
    auto getter = fx.open_channel(); // 3
    auto manual = fx.open_channel(); // 4
    fx.publish("a", "a1");
    fx.publish("b", {"b1", "b2"});
    std::error_code ec;
    REQUIRE(getter.basic_get("b", ec, true));
    REQUIRE(manual.basic_get("b", ec, false));

    fx.advance(10s);
    CHECK(auto_ack.ch.is_open());
    CHECK(getter.is_open());
    REQUIRE_FALSE(manual.is_open());
    CHECK(manual.close_reason().text == timeout_text(4, 1000));
    CHECK(fx.drain("b") == std::vector<std::string>{"b2"});
    CHECK(fx.clock.pending() == 0);
}

TEST_CASE("consumer timeout: 30 minutes checked every minute on every profile, no timer while "
          "nothing is unacknowledged, and none at all without a timeout",
          "[transport][in_memory][consumer_timeout]") {
    for (const auto& p :
         {in_memory::broker_profile::rabbitmq_3_10(), in_memory::broker_profile::rabbitmq_4_3()}) {
        CHECK(p.consumer_timeout == std::chrono::minutes{30});
        CHECK(p.channel_tick_interval == std::chrono::minutes{1});
    }

    SECTION("the default closes a channel 31 minutes after a delivery made as it opened") {
        broker_fixture fx;
        fx.declare_queue("work");
        consumer_on_channel c{fx.open_channel(), {}};
        consume(c, "work");
        fx.publish("work", "slow");
        fx.advance(30min); // the tick on the deadline
        CHECK(c.ch.is_open());
        fx.advance(1min);
        REQUIRE_FALSE(c.ch.is_open());
        CHECK(c.ch.close_reason().text == timeout_text(2, 1'800'000));
    }
    SECTION("an acknowledgement in time cancels the channel's timer") {
        broker_fixture fx(short_timeout());
        fx.declare_queue("work");
        consumer_on_channel c{fx.open_channel(), {}};
        consume(c, "work");
        fx.publish("work", "quick");
        CHECK(fx.clock.pending() == 1);
        fx.advance(900ms);
        REQUIRE_FALSE(c.ch.basic_ack(c.r.last_tag()));
        CHECK(fx.clock.pending() == 0);
        fx.advance(1h);
        CHECK(c.ch.is_open());
    }
    SECTION("without a timeout a delivery may stay unacknowledged for ever") {
        auto p = in_memory::broker_profile::rabbitmq_3_10();
        p.consumer_timeout.reset();
        broker_fixture fx(p);
        fx.declare_queue("work");
        consumer_on_channel c{fx.open_channel(), {}};
        consume(c, "work");
        fx.publish("work", "held");
        CHECK(fx.clock.pending() == 0);
        fx.advance(24h);
        CHECK(c.ch.is_open());
        CHECK(c.ch.unacked_count() == 1);
    }
}

TEST_CASE("consumer timeout: a consumer whose handler outlasts it consumes again on a new "
          "channel, the inbox applies the effect once, and the transport counts the timeout",
          "[transport][in_memory][consumer_timeout][consumer]") {
    // A one-minute timeout checked every 10 s; the first call to the slow service takes two.
    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    in_memory::broker broker(io.get_executor(), clock,
                             in_memory::broker_options{.profile = short_timeout(1min, 10s)});
    letterbox::in_memory::transport transport(broker, "worker");
    auto drive_until = [&](const std::function<bool()>& done) {
        return letterbox::testing::drive_until(io, clock, done, 200'000);
    };
    auto await = [&](auto op) {
        std::optional<std::error_code> r;
        op([&r](std::error_code ec) { r = ec; });
        REQUIRE(drive_until([&] { return r.has_value(); }));
        return *r;
    };
    REQUIRE_FALSE(
        await([&](auto h) { transport.async_declare(topology::queue{.name = "work"}, h); }));

    auto timer = std::make_shared<decltype(clock.make_timer(io.get_executor()))>(
        clock.make_timer(io.get_executor()));
    int calls = 0;
    auto call = [&](const letterbox::message&) -> boost::asio::awaitable<int> {
        if (++calls == 1) {
            timer->expires_after(2min);
            co_await timer->async_wait(boost::asio::use_awaitable);
        }
        co_return calls;
    };
    std::map<std::string, int> effects; // applied when the unit of work commits
    auto effect = [&](const letterbox::message& m, const int&,
                      letterbox::in_memory_unit_of_work& u) {
        return u.on_commit([&effects, body = m.body] { ++effects[body]; });
    };
    letterbox::in_memory_inbox_store inbox;
    auto handler = letterbox::middleware::idempotent(
        letterbox::middleware::after_call(call, effect), inbox,
        [] { return letterbox::in_memory_unit_of_work{}; }, "shipping", clock);
    std::vector<bool> redelivered;
    letterbox::consumer_options options;
    options.consume.queue = "work";
    options.on_event = [&](const letterbox::consumer_event& e) {
        if (e.what == letterbox::consumer_event::kind::delivered)
            redelivered.push_back(e.d.redelivered);
    };
    letterbox::consumer c(transport, handler, clock, options);
    std::optional<std::error_code> started;
    c.async_start([&](std::error_code ec, const std::string&) { started = ec; });
    REQUIRE(drive_until([&] { return started.has_value(); }));
    REQUIRE_FALSE(*started);

    letterbox::message m;
    m.id = letterbox::message_id_generator{5}();
    m.routing_key = "work";
    m.body = "order-1";
    REQUIRE_FALSE(await([&](auto h) { transport.async_publish(m, h); }));
    // The first run waits for its call past the timeout: the broker closes the consumer's
    // channel at the first tick after one minute, the transport consumes again, and the
    // redelivery is handled (its call is quick) and acknowledged on the new channel. When the
    // first run's call returns, the inbox already holds the message: a duplicate, whose ack
    // fails on the closed channel and changes nothing.
    REQUIRE(drive_until([&] {
        return c.stats().acked == 2 && broker.queue("work")->ready == 0 &&
               broker.queue("work")->unacked == 0;
    }));
    CHECK(transport.consumer_timeouts() == 1);
    CHECK(redelivered == std::vector<bool>{false, true});
    CHECK(calls == 2);
    CHECK(effects == std::map<std::string, int>{{"order-1", 1}});
    CHECK(handler.stats().processed == 1);
    CHECK(handler.stats().duplicates == 1);
    CHECK(broker.counters().redelivered == 1);
    CHECK(broker.queue("work")->consumers == 1); // the consumer lives on, on its new channel
    CHECK(clock.pending() == 0);
    REQUIRE_FALSE(await([&](auto h) { transport.async_close(h); }));
}

} // namespace unit_transport_in_memory_consumer_timeout
