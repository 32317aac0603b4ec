// SPDX-License-Identifier: BSL-1.0
// Single active consumer (`x-single-active-consumer`) in the RabbitMQ model: who receives, who
// takes over when the active consumer is cancelled or its channel closes, and what a declaration
// or a consume on such a queue refuses. The texts, counts and orders were read from a real
// RabbitMQ 3.10.8 by tests/integration/amqp_differential.cpp (single_active_consumer_*);
// docs/in-memory-transport.md §2.16 lists what differs.

#include <letterbox/transport/in_memory/broker.hpp>

#include "scenario_fixture.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace unit_transport_in_memory_single_active_consumer {

using namespace broker_scenarios;

namespace {

using queue_type = topology::queue_type;
using letterbox::field_table;

topology::queue sac_queue(std::string name, queue_type type, field_table extra = {}) {
    topology::queue q;
    q.name = std::move(name);
    q.durable = true;
    q.arguments.set("x-single-active-consumer", true);
    if (type == queue_type::quorum)
        q.arguments.set("x-queue-type", "quorum");
    for (const auto& [k, v] : extra)
        q.arguments.set(k, v);
    return q;
}

/// Declares `q` on a fresh channel of `fx`; the reply text it was refused with, or "ok".
std::string declare_text(broker_fixture& fx, const topology::queue& q) {
    auto ch = fx.open_channel();
    if (!ch.queue_declare(q))
        return "ok";
    return ch.close_reason().text;
}

/// A consumer on its own channel with prefetch `prefetch`, as every consumer of a real
/// application has.
struct consumer_on_channel {
    in_memory::channel ch;
    recorder r;
    std::string tag;
};

void start(broker_fixture& fx, consumer_on_channel& c, const std::string& queue,
           std::uint16_t prefetch) {
    c.ch = fx.open_channel();
    REQUIRE_FALSE(c.ch.basic_qos(prefetch));
    std::error_code ec;
    c.tag = c.ch.basic_consume(queue, c.r.on_delivery(), ec);
    REQUIRE_FALSE(ec);
}

std::size_t declare_ok_consumers(broker_fixture& fx, const topology::queue& q) {
    std::error_code ec;
    const auto ok = fx.observer().queue_declare(q, ec, true);
    REQUIRE_FALSE(ec);
    return ok.consumer_count;
}

} // namespace

TEST_CASE("x-single-active-consumer must be a bool: any other type refuses the declaration with "
          "406",
          "[transport][in_memory][single_active_consumer]") {
    broker_fixture fx;
    const std::string prefix = "PRECONDITION_FAILED - invalid arg 'x-single-active-consumer' for ";
    auto with = [](std::string name, field_table args) {
        topology::queue q;
        q.name = std::move(name);
        q.arguments = std::move(args);
        return q;
    };
    CHECK(declare_text(fx, with("A", field_table{{"x-single-active-consumer", "true"}})) ==
          prefix + "queue 'A' in vhost '/': {unacceptable_type,longstr}");
    CHECK(declare_text(fx, with("B", field_table{{"x-single-active-consumer", std::int64_t{1}}})) ==
          prefix + "queue 'B' in vhost '/': {unacceptable_type,long}");
    CHECK(declare_text(fx, with("C", field_table{{"x-single-active-consumer", std::int32_t{0}}})) ==
          prefix + "queue 'C' in vhost '/': {unacceptable_type,signedint}");
    CHECK(declare_text(fx, with("D", field_table{{"x-single-active-consumer", "yes"},
                                                 {"x-queue-type", "quorum"}})) ==
          prefix + "queue 'D' in vhost '/': {unacceptable_type,longstr}");
    // 3.10.8 reports the other arguments' values first, the queue type included.
    CHECK(declare_text(fx, with("E", field_table{{"x-single-active-consumer", "yes"},
                                                 {"x-max-length", std::int64_t{-1}}})) ==
          "PRECONDITION_FAILED - invalid arg 'x-max-length' for queue 'E' in vhost '/': "
          "{value_negative,-1}");
    CHECK(declare_text(fx, with("F", field_table{{"x-single-active-consumer", "yes"},
                                                 {"x-queue-type", "weird"}})) ==
          "PRECONDITION_FAILED - invalid arg 'x-queue-type' for queue 'F' in vhost '/': "
          "\"unsupported queue type 'weird'\"");
    for (const char* name : {"A", "B", "C", "D", "E", "F"})
        CHECK_FALSE(fx.broker.queue(name));
}

TEST_CASE("a single-active-consumer queue must be declared again with the same value, and false "
          "is not the same as absent",
          "[transport][in_memory][single_active_consumer]") {
    broker_fixture fx;
    REQUIRE(declare_text(fx, sac_queue("Q", queue_type::classic)) == "ok");
    const std::string prefix = "PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' "
                               "for queue 'Q' in vhost '/': ";
    auto off = sac_queue("Q", queue_type::classic);
    off.arguments.set("x-single-active-consumer", false);
    CHECK(declare_text(fx, off) == prefix + "received 'false' but current is 'true'");
    auto absent = sac_queue("Q", queue_type::classic);
    absent.arguments.erase("x-single-active-consumer");
    CHECK(declare_text(fx, absent) ==
          prefix + "received none but current is the value 'true' of type 'bool'");
    CHECK(declare_text(fx, sac_queue("Q", queue_type::classic)) == "ok");
}

TEST_CASE("only the first consumer of a single-active-consumer queue receives",
          "[transport][in_memory][single_active_consumer]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    const auto q = sac_queue("Q", type);
    REQUIRE_FALSE(fx.ch.queue_declare(q));
    publish_numbered(fx, "Q", 1, 4);
    consumer_on_channel first, second, third;
    start(fx, first, "Q", 1);
    start(fx, second, "Q", 1);
    start(fx, third, "Q", 1);
    CHECK(first.r.bodies() == std::vector<std::string>{"m1"});
    CHECK(second.r.deliveries.empty());
    CHECK(third.r.deliveries.empty());
    // Acking makes room for the next message, which goes to the same consumer.
    REQUIRE_FALSE(first.ch.basic_ack(first.r.last_tag()));
    publish_numbered(fx, "Q", 5, 5);
    CHECK(first.r.bodies() == std::vector<std::string>{"m1", "m2"});
    CHECK(second.r.deliveries.empty());
    CHECK(third.r.deliveries.empty());
    CHECK(fx.count("Q") == tru(4, 3, 1));
    // list_queues counts every consumer; a 3.10 quorum queue's declare-ok only the active one.
    CHECK(fx.broker.queue("Q")->consumers == 3);
    CHECK(declare_ok_consumers(fx, q) == (type == queue_type::quorum ? 1U : 3U));
}

TEST_CASE("x-single-active-consumer false means off: consumers share the messages round robin",
          "[transport][in_memory][single_active_consumer]") {
    broker_fixture fx;
    auto q = sac_queue("Q", queue_type::classic);
    q.arguments.set("x-single-active-consumer", false);
    REQUIRE_FALSE(fx.ch.queue_declare(q));
    consumer_on_channel a, b;
    start(fx, a, "Q", 10);
    start(fx, b, "Q", 10);
    publish_numbered(fx, "Q", 1, 4);
    CHECK(a.r.bodies() == std::vector<std::string>{"m1", "m3"});
    CHECK(b.r.bodies() == std::vector<std::string>{"m2", "m4"});
}

TEST_CASE("cancelling the active consumer makes the next one in registration order active, and "
          "the cancelled one keeps its unacknowledged messages",
          "[transport][in_memory][single_active_consumer]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    REQUIRE_FALSE(fx.ch.queue_declare(sac_queue("Q", type)));
    publish_numbered(fx, "Q", 1, 4);
    consumer_on_channel first, second, third;
    start(fx, first, "Q", 1);
    start(fx, second, "Q", 1);
    start(fx, third, "Q", 1);
    REQUIRE(first.r.bodies() == std::vector<std::string>{"m1"});

    REQUIRE_FALSE(first.ch.basic_cancel(first.tag));
    // The model hands over at once, as quorum queues and the fixed classic queues do; 3.10.8's
    // classic queue waits for its next event (docs/in-memory-transport.md §2.16).
    CHECK(second.r.bodies() == std::vector<std::string>{"m2"});
    CHECK(third.r.deliveries.empty());
    // m1 stays unacknowledged on the cancelled consumer's channel: nobody else receives it.
    CHECK(fx.count("Q") == tru(4, 2, 2));
    CHECK(first.ch.unacked_count() == 1);
    REQUIRE_FALSE(first.ch.basic_ack(first.r.last_tag()));
    CHECK(fx.count("Q") == tru(3, 2, 1));
    CHECK(first.r.bodies() == std::vector<std::string>{"m1"});

    REQUIRE_FALSE(second.ch.basic_ack(second.r.last_tag()));
    CHECK(second.r.bodies() == std::vector<std::string>{"m2", "m3"});
    CHECK(third.r.deliveries.empty());
    CHECK(fx.broker.queue("Q")->consumers == 2);
}

TEST_CASE("closing the active consumer's channel requeues its messages in their original order "
          "to the next consumer, before the rest",
          "[transport][in_memory][single_active_consumer]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    REQUIRE_FALSE(fx.ch.queue_declare(sac_queue("Q", type)));
    publish_numbered(fx, "Q", 1, 4);
    consumer_on_channel first, second, third;
    start(fx, first, "Q", 2);
    start(fx, second, "Q", 10);
    start(fx, third, "Q", 10);
    REQUIRE(first.r.bodies() == std::vector<std::string>{"m1", "m2"});
    // Cancelling a waiting consumer changes nothing.
    REQUIRE_FALSE(third.ch.basic_cancel(third.tag));
    CHECK(second.r.deliveries.empty());

    first.ch.close();
    CHECK(second.r.bodies() == std::vector<std::string>{"m1", "m2", "m3", "m4"});
    CHECK(second.r.redelivered_flags() == std::vector<bool>{true, true, false, false});
    CHECK(third.r.deliveries.empty());
    if (type == queue_type::quorum) {
        // A closed channel's messages count as failed deliveries.
        CHECK(second.r.deliveries[0].msg->headers.get<std::int64_t>("x-delivery-count") == 1);
        CHECK(second.r.deliveries[1].msg->headers.get<std::int64_t>("x-delivery-count") == 1);
    }
    CHECK(fx.count("Q") == tru(4, 0, 4));
}

TEST_CASE("when a connection with the active and the next consumer closes, the oldest consumer "
          "left on another connection becomes active",
          "[transport][in_memory][single_active_consumer]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    REQUIRE_FALSE(fx.ch.queue_declare(sac_queue("Q", type)));
    publish_numbered(fx, "Q", 1, 3);
    auto conn = fx.broker.connect("closing");
    std::error_code ec;
    recorder first, second, third;
    auto ch1 = conn.open_channel();
    REQUIRE_FALSE(ch1.basic_qos(1));
    ch1.basic_consume("Q", first.on_delivery(), ec);
    auto ch2 = conn.open_channel();
    ch2.basic_consume("Q", second.on_delivery(), ec);
    auto ch3 = fx.open_channel();
    ch3.basic_consume("Q", third.on_delivery(), ec);
    REQUIRE(first.bodies() == std::vector<std::string>{"m1"});

    conn.close();
    // The second consumer closed with the first, so it never became active.
    CHECK(second.deliveries.empty());
    CHECK(third.bodies() == std::vector<std::string>{"m1", "m2", "m3"});
    CHECK(third.redelivered_flags() == std::vector<bool>{true, false, false});
}

TEST_CASE("a consumer that arrives later waits behind the older ones, whatever its x-priority",
          "[transport][in_memory][single_active_consumer]") {
    broker_fixture fx;
    REQUIRE_FALSE(fx.ch.queue_declare(sac_queue("Q", queue_type::classic)));
    publish_numbered(fx, "Q", 1, 6);
    consumer_on_channel a, b, c, d;
    start(fx, a, "Q", 1);
    start(fx, b, "Q", 1);
    REQUIRE_FALSE(a.ch.basic_cancel(a.tag));
    REQUIRE(b.r.bodies() == std::vector<std::string>{"m2"});
    start(fx, c, "Q", 1);
    // A higher-priority consumer never takes over from the active one.
    d.ch = fx.open_channel();
    REQUIRE_FALSE(d.ch.basic_qos(1));
    std::error_code ec;
    in_memory::basic_consume_options urgent;
    urgent.arguments.set("x-priority", std::int64_t{10});
    d.tag = d.ch.basic_consume("Q", d.r.on_delivery(), ec, urgent);
    REQUIRE_FALSE(ec);
    CHECK(c.r.deliveries.empty());
    CHECK(d.r.deliveries.empty());
    // When the active one goes, RabbitMQ 3.10's classic queue would choose the highest
    // x-priority; the model does not read consumer arguments and chooses the oldest (§4).
    REQUIRE_FALSE(b.ch.basic_cancel(b.tag));
    CHECK(c.r.bodies() == std::vector<std::string>{"m3"});
    CHECK(d.r.deliveries.empty());
}

TEST_CASE("a classic single-active-consumer queue refuses an exclusive consumer with 403, even as "
          "its first consumer",
          "[transport][in_memory][single_active_consumer]") {
    broker_fixture fx;
    REQUIRE_FALSE(fx.ch.queue_declare(sac_queue("Q", queue_type::classic)));
    recorder r;
    std::error_code ec;
    in_memory::basic_consume_options exclusive;
    exclusive.exclusive = true;
    auto ch = fx.open_channel();
    ch.basic_consume("Q", r.on_delivery(), ec, exclusive);
    CHECK(ec == errc::access_refused);
    CHECK(ch.close_reason().text == "ACCESS_REFUSED - queue 'Q' in vhost '/' in exclusive use");
    CHECK(fx.broker.queue("Q")->consumers == 0);
    consumer_on_channel plain;
    start(fx, plain, "Q", 1);
    auto again = fx.open_channel();
    again.basic_consume("Q", r.on_delivery(), ec, exclusive);
    CHECK(ec == errc::access_refused);
    CHECK(fx.broker.queue("Q")->consumers == 1);
}

TEST_CASE("a 3.10 quorum queue ignores the exclusive flag of basic.consume",
          "[transport][in_memory][single_active_consumer]") {
    const bool sac = GENERATE(true, false);
    INFO("single active consumer: " << sac);
    broker_fixture fx;
    auto q = sac_queue("QQ", queue_type::quorum);
    if (!sac)
        q.arguments.erase("x-single-active-consumer");
    REQUIRE_FALSE(fx.ch.queue_declare(q));
    in_memory::basic_consume_options exclusive;
    exclusive.exclusive = true;
    recorder r1, r2, r3;
    std::error_code ec;
    auto ch1 = fx.open_channel();
    ch1.basic_consume("QQ", r1.on_delivery(), ec, exclusive);
    CHECK_FALSE(ec);
    auto ch2 = fx.open_channel();
    ch2.basic_consume("QQ", r2.on_delivery(), ec);
    CHECK_FALSE(ec);
    auto ch3 = fx.open_channel();
    ch3.basic_consume("QQ", r3.on_delivery(), ec, exclusive);
    CHECK_FALSE(ec);
    CHECK(fx.broker.queue("QQ")->consumers == 3);
}

TEST_CASE("basic.get on a quorum single-active-consumer queue is refused with 405, a classic one "
          "allows it",
          "[transport][in_memory][single_active_consumer]") {
    broker_fixture fx;
    REQUIRE_FALSE(fx.ch.queue_declare(sac_queue("QQ", queue_type::quorum)));
    REQUIRE_FALSE(fx.ch.queue_declare(sac_queue("CQ", queue_type::classic)));
    fx.publish("QQ", "m1");
    fx.publish("CQ", "m1");
    auto ch = fx.open_channel();
    std::error_code ec;
    CHECK_FALSE(ch.basic_get("QQ", ec));
    CHECK(ec == errc::resource_locked);
    CHECK(letterbox::amqp_reply_code(errc::resource_locked) == 405);
    CHECK(ch.close_reason().text ==
          "RESOURCE_LOCKED - cannot obtain access to locked queue 'QQ' in vhost '/'. basic.get "
          "operations are not supported by quorum queues with single active consumer");
    CHECK(fx.ready("QQ") == 1);
    CHECK(fx.get_body("CQ") == "m1");
}

} // namespace unit_transport_in_memory_single_active_consumer
