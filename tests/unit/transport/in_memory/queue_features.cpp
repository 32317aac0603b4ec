// SPDX-License-Identifier: BSL-1.0
// In-memory broker scenarios: alternate exchanges, classic queue priorities and queue expiry
// (`x-expires`, RMQ-TTL-08). Each behaviour was compared with a real RabbitMQ 3.10.8 by the
// differential test (tests/integration/amqp_differential.cpp: alternate_exchanges,
// classic_priorities, queue_expiry).

#include "scenario_fixture.hpp"

#include <letterbox/topology/exchange.hpp>

#include <string>
#include <vector>

namespace unit_transport_in_memory_queue_features {

using namespace broker_scenarios;
using topology::exchange_type;

namespace {

void declare_exchange_with(broker_fixture& fx, const std::string& name, exchange_type type,
                           letterbox::field_table args) {
    topology::exchange x;
    x.name = name;
    x.type = type;
    x.arguments = std::move(args);
    REQUIRE_FALSE(fx.ch.exchange_declare(x));
}

letterbox::field_table alternate(const std::string& name) {
    return letterbox::field_table{{"alternate-exchange", name}};
}

letterbox::message with_priority(std::string queue, std::string body,
                                 std::optional<std::uint8_t> priority) {
    auto m = make_message("", std::move(queue), std::move(body));
    m.properties.priority = priority;
    return m;
}

} // namespace

// ---- alternate exchanges ------------------------------------------------------------------------

TEST_CASE("a message its exchange cannot route goes to the alternate exchange, confirmed and "
          "not returned although mandatory",
          "[transport][in_memory][alternate_exchange]") {
    broker_fixture fx;
    fx.declare_exchange("AE", exchange_type::fanout);
    fx.declare_queue("ae-q");
    fx.bind("ae-q", "AE", "");
    declare_exchange_with(fx, "X", exchange_type::direct, alternate("AE"));
    fx.declare_queue("x-q");
    fx.bind("x-q", "X", "k");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "k", "routed"), true));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "other", "unroutable by X"), true));
    CHECK(log.events == std::vector<std::string>{"ack:1", "ack:2"});
    CHECK(fx.drain("x-q") == std::vector<std::string>{"routed"});
    CHECK(fx.drain("ae-q") == std::vector<std::string>{"unroutable by X"});
    CHECK(fx.broker.counters().unroutable == 0);
}

TEST_CASE("a missing or unroutable alternate exchange leaves the message unroutable",
          "[transport][in_memory][alternate_exchange]") {
    broker_fixture fx;
    declare_exchange_with(fx, "lost", exchange_type::direct, alternate("missing"));
    fx.declare_exchange("empty-ae", exchange_type::direct);
    declare_exchange_with(fx, "via-empty", exchange_type::direct, alternate("empty-ae"));
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("lost", "k", "a"), true));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("via-empty", "k", "b"), true));
    CHECK(log.events == std::vector<std::string>{"return:1", "ack:1", "return:2", "ack:2"});
    CHECK(fx.broker.counters().unroutable == 2);
}

TEST_CASE("alternate exchanges chain, and a loop of them ends",
          "[transport][in_memory][alternate_exchange]") {
    broker_fixture fx;
    fx.declare_exchange("AE", exchange_type::fanout);
    fx.declare_queue("ae-q");
    fx.bind("ae-q", "AE", "");
    declare_exchange_with(fx, "c2", exchange_type::direct, alternate("AE"));
    declare_exchange_with(fx, "c1", exchange_type::topic, alternate("c2"));
    declare_exchange_with(fx, "l1", exchange_type::direct, alternate("l2"));
    declare_exchange_with(fx, "l2", exchange_type::direct, alternate("l1"));
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("c1", "no.match", "two hops"), true));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("l1", "k", "loop"), true));
    CHECK(log.events == std::vector<std::string>{"ack:1", "return:2", "ack:2"});
    CHECK(fx.drain("ae-q") == std::vector<std::string>{"two hops"});
}

TEST_CASE("an exchange whose binding matched does not use its alternate exchange, even when the "
          "match leads nowhere",
          "[transport][in_memory][alternate_exchange]") {
    broker_fixture fx;
    fx.declare_exchange("AE", exchange_type::fanout);
    fx.declare_queue("ae-q");
    fx.bind("ae-q", "AE", "");
    fx.declare_exchange("dead-end", exchange_type::direct);
    declare_exchange_with(fx, "X", exchange_type::direct, alternate("AE"));
    REQUIRE_FALSE(fx.ch.exchange_bind("dead-end", "X", "k"));
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "k", "matched"), true));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "j", "not matched"), true));
    CHECK(log.events == std::vector<std::string>{"return:1", "ack:1", "ack:2"});
    CHECK(fx.drain("ae-q") == std::vector<std::string>{"not matched"});
}

TEST_CASE("a dead letter its dead-letter exchange cannot route goes to the alternate exchange",
          "[transport][in_memory][alternate_exchange]") {
    broker_fixture fx;
    fx.declare_exchange("AE", exchange_type::fanout);
    fx.declare_queue("ae-q");
    fx.bind("ae-q", "AE", "");
    declare_exchange_with(fx, "DLX", exchange_type::direct, alternate("AE"));
    fx.declare_queue("Q", dlx_args("DLX", "no-binding"));
    fx.publish("Q", "dead");
    auto d = fx.get("Q");
    REQUIRE(d);
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    auto got = fx.drain_deliveries("ae-q");
    REQUIRE(got.size() == 1);
    CHECK(x_death_queues(*got[0].msg) == std::vector<std::string>{"Q"});
}

TEST_CASE("redeclaring an exchange with another alternate exchange is refused with 406",
          "[transport][in_memory][alternate_exchange]") {
    broker_fixture fx;
    declare_exchange_with(fx, "X", exchange_type::direct, alternate("AE1"));
    topology::exchange again;
    again.name = "X";
    again.type = exchange_type::direct;
    again.durable = true;
    again.arguments = alternate("AE1");
    CHECK_FALSE(fx.ch.exchange_declare(again));
    again.arguments = alternate("AE2");
    CHECK(fx.ch.exchange_declare(again) == errc::precondition_failed);
    CHECK(fx.ch.close_reason().text ==
          "PRECONDITION_FAILED - inequivalent arg 'alternate-exchange' for exchange 'X' in "
          "vhost '/': received 'AE2' but current is 'AE1'");
}

// ---- classic queue priorities -------------------------------------------------------------------

TEST_CASE("a classic priority queue delivers by priority, FIFO within one, capped at its maximum",
          "[transport][in_memory][priority]") {
    broker_fixture fx;
    topology::queue_arguments a;
    a.max_priority = 5;
    fx.declare_queue("P", a);
    for (const auto& [body, p] :
         std::vector<std::pair<std::string, std::optional<std::uint8_t>>>{{"none", std::nullopt},
                                                                          {"p3", 3},
                                                                          {"p1", 1},
                                                                          {"p5", 5},
                                                                          {"p9", 9},
                                                                          {"p3b", 3},
                                                                          {"p0", 0}})
        REQUIRE_FALSE(fx.ch.basic_publish(with_priority("P", body, p)));
    auto first = fx.get("P");
    REQUIRE(first);
    CHECK(body_of(*first) == "p5");
    // Requeued, it goes back to its place: before p9, which was published after it.
    REQUIRE_FALSE(fx.ch.basic_nack(first->delivery_tag, false, true));
    auto got = fx.drain_deliveries("P");
    std::vector<std::string> bodies;
    for (const auto& d : got)
        bodies.push_back(body_of(d));
    CHECK(bodies == std::vector<std::string>{"p5", "p9", "p3", "p3b", "p1", "none", "p0"});
    // The property is delivered as published: only the queue's order is capped.
    REQUIRE(got.size() == 7);
    CHECK(got[1].msg->properties.priority == 9);
}

TEST_CASE("drop-head on a priority queue drops the highest priority first",
          "[transport][in_memory][priority]") {
    broker_fixture fx;
    topology::queue_arguments a;
    a.max_priority = 5;
    a.max_length = 2;
    fx.declare_queue("P", a);
    REQUIRE_FALSE(fx.ch.basic_publish(with_priority("P", "p1", 1)));
    REQUIRE_FALSE(fx.ch.basic_publish(with_priority("P", "p5", 5)));
    REQUIRE_FALSE(fx.ch.basic_publish(with_priority("P", "p3", 3)));
    CHECK(fx.drain("P") == std::vector<std::string>{"p3", "p1"});
}

TEST_CASE("a queue without x-max-priority ignores message priorities, and quorum queues refuse "
          "the argument",
          "[transport][in_memory][priority]") {
    broker_fixture fx;
    fx.declare_queue("fifo");
    REQUIRE_FALSE(fx.ch.basic_publish(with_priority("fifo", "p1", 1)));
    REQUIRE_FALSE(fx.ch.basic_publish(with_priority("fifo", "p5", 5)));
    CHECK(fx.drain("fifo") == std::vector<std::string>{"p1", "p5"});

    topology::queue q;
    q.name = "QQ";
    q.durable = true;
    topology::queue_arguments a;
    a.type = topology::queue_type::quorum;
    a.max_priority = 5;
    q.arguments = a.to_table();
    CHECK(fx.ch.queue_declare(q) == errc::precondition_failed);
    CHECK(fx.ch.close_reason().text ==
          "PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'QQ' in vhost '/' of "
          "queue type rabbit_quorum_queue");
    CHECK_FALSE(fx.broker.queue("QQ"));
}

TEST_CASE("a consumer waiting on a priority queue receives the highest priority first",
          "[transport][in_memory][priority]") {
    broker_fixture fx;
    topology::queue_arguments a;
    a.max_priority = 10;
    fx.declare_queue("P", a);
    for (const auto& [body, p] :
         std::vector<std::pair<std::string, std::uint8_t>>{{"c1", 1}, {"c4", 4}, {"c2", 2}})
        REQUIRE_FALSE(fx.ch.basic_publish(with_priority("P", body, p)));
    REQUIRE_FALSE(fx.ch.basic_qos(1));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("P", r.on_delivery(), ec);
    REQUIRE_FALSE(ec);
    for (int i = 0; i < 3; ++i) {
        REQUIRE(r.deliveries.size() == static_cast<std::size_t>(i + 1));
        REQUIRE_FALSE(fx.ch.basic_ack(r.last_tag()));
    }
    CHECK(r.bodies() == std::vector<std::string>{"c4", "c2", "c1"});
}

TEST_CASE("x-max-priority must be an integer from 0 to 255", "[transport][in_memory][priority]") {
    const auto [value, text] = GENERATE(
        std::pair<letterbox::field_value, std::string>{std::int64_t{256},
                                                       "{max_value_exceeded,256}"},
        std::pair<letterbox::field_value, std::string>{std::int64_t{-1}, "{value_negative,-1}"},
        std::pair<letterbox::field_value, std::string>{"high",
                                                       "\"expected integer, got longstr\""});
    broker_fixture fx;
    topology::queue q;
    q.name = "P";
    q.arguments.set("x-max-priority", value);
    CHECK(fx.ch.queue_declare(q) == errc::precondition_failed);
    CHECK(fx.ch.close_reason().text ==
          "PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'P' in vhost '/': " + text);
}

// ---- x-expires ----------------------------------------------------------------------------------

namespace {

topology::queue_arguments expiring_after(std::chrono::milliseconds period) {
    auto a = dlx_args("DLX");
    a.expires = period;
    return a;
}

} // namespace

TEST_CASE("RMQ-TTL-08 an unused queue is deleted after x-expires, its messages dropped without "
          "dead-lettering",
          "[transport][in_memory][expires]") {
    broker_fixture fx;
    fx.declare_exchange("DLX", exchange_type::fanout);
    fx.declare_queue("DLQ");
    fx.bind("DLQ", "DLX", "");
    fx.declare_queue("idle", expiring_after(1000ms));
    fx.publish("idle", {"m1", "m2"});
    fx.advance(999ms);
    CHECK(fx.broker.queue("idle"));
    fx.advance(1ms);
    CHECK_FALSE(fx.broker.queue("idle"));
    CHECK(fx.ready("DLQ") == 0);
    CHECK(fx.broker.counters().dropped_of(in_memory::drop_kind::queue_expired) == 2);
    CHECK(fx.broker.bindings("DLX").size() == 1); // only DLQ's binding is left
}

TEST_CASE("RMQ-TTL-08 a basic.get, a declare (passive too) and a consumer keep a queue in use",
          "[transport][in_memory][expires]") {
    broker_fixture fx;
    fx.declare_exchange("DLX", exchange_type::fanout);
    const auto period = 1000ms;
    SECTION("a basic.get, even an empty one, starts the period again") {
        fx.declare_queue("Q", expiring_after(period));
        fx.advance(800ms);
        CHECK_FALSE(fx.get("Q"));
        fx.advance(800ms);
        CHECK(fx.broker.queue("Q"));
        fx.advance(200ms);
        CHECK_FALSE(fx.broker.queue("Q"));
    }
    SECTION("a passive declare starts the period again") {
        fx.declare_queue("Q", expiring_after(period));
        fx.advance(800ms);
        topology::queue q;
        q.name = "Q";
        std::error_code ec;
        fx.ch.queue_declare(q, ec, true);
        REQUIRE_FALSE(ec);
        fx.advance(800ms);
        CHECK(fx.broker.queue("Q"));
        fx.advance(200ms);
        CHECK_FALSE(fx.broker.queue("Q"));
    }
    SECTION("a redeclare starts the period again") {
        fx.declare_queue("Q", expiring_after(period));
        fx.advance(800ms);
        fx.declare_queue("Q", expiring_after(period));
        fx.advance(800ms);
        CHECK(fx.broker.queue("Q"));
        fx.advance(200ms);
        CHECK_FALSE(fx.broker.queue("Q"));
    }
    SECTION("a publish does not") {
        fx.declare_queue("Q", expiring_after(period));
        fx.advance(800ms);
        fx.publish("Q", "m");
        fx.advance(200ms);
        CHECK_FALSE(fx.broker.queue("Q"));
    }
    SECTION("a queue with a consumer stays; the period starts when the last consumer leaves") {
        fx.declare_queue("Q", expiring_after(period));
        recorder r;
        std::error_code ec;
        in_memory::basic_consume_options opts;
        opts.consumer_tag = "c";
        fx.ch.basic_consume("Q", r.on_delivery(), ec, opts);
        REQUIRE_FALSE(ec);
        fx.advance(5000ms);
        CHECK(fx.broker.queue("Q"));
        REQUIRE_FALSE(fx.ch.basic_cancel("c"));
        fx.advance(999ms);
        CHECK(fx.broker.queue("Q"));
        fx.advance(1ms);
        CHECK_FALSE(fx.broker.queue("Q"));
    }
}

TEST_CASE("x-expires is part of the redeclare equivalence check",
          "[transport][in_memory][expires]") {
    broker_fixture fx;
    topology::queue_arguments a;
    a.expires = 60'000ms;
    fx.declare_queue("Q", a);
    topology::queue q;
    q.name = "Q";
    q.durable = true;
    a.expires = 70'000ms;
    q.arguments = a.to_table();
    CHECK(fx.ch.queue_declare(q) == errc::precondition_failed);
    CHECK(fx.ch.close_reason().text ==
          "PRECONDITION_FAILED - inequivalent arg 'x-expires' for queue 'Q' in vhost '/': "
          "received '70000' but current is '60000'");
}

} // namespace unit_transport_in_memory_queue_features
