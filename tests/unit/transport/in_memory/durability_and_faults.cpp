// SPDX-License-Identifier: BSL-1.0
// Durability across a simulated restart, fault hooks, exclusive and auto-delete queues and
// consumer cancellation in the RabbitMQ model (research/reliability-anchors.md A2 RMQ-ACK-18,
// A4 RMQ-PC-16, A12; DESIGN §4 "Durability").

#include <letterbox/transport/in_memory/broker.hpp>

#include "scenario_fixture.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace unit_transport_in_memory_durability_and_faults {

using namespace broker_scenarios;

namespace {

using queue_type = topology::queue_type;
using strings = std::vector<std::string>;

letterbox::message persistent(std::string queue, std::string body, bool yes) {
    auto m = make_message("", std::move(queue), std::move(body));
    m.properties.persistent = yes;
    return m;
}

bool has_binding(const broker_fixture& fx, const std::string& source,
                 const std::string& destination) {
    const auto bs = fx.broker.bindings(source);
    return std::any_of(bs.begin(), bs.end(),
                       [&](const auto& b) { return b.destination == destination; });
}

} // namespace

TEST_CASE("a restart keeps exactly the durable exchanges, queues and bindings and the persistent "
          "messages",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("DX", topology::exchange_type::fanout, true);
    fx.declare_exchange("DX2", topology::exchange_type::fanout, true);
    fx.declare_exchange("TX", topology::exchange_type::fanout, false);
    fx.declare_queue("DQ", {}, true);
    fx.declare_queue("TQ", {}, false);
    fx.declare_queue("QQ", of_type(queue_type::quorum), true);
    fx.bind("DQ", "DX", "");
    fx.bind("TQ", "DX", "");
    fx.bind("DQ", "TX", "");
    fx.bind("QQ", "DX2", "");
    REQUIRE_FALSE(fx.ch.exchange_bind("DX2", "DX", ""));
    REQUIRE_FALSE(fx.ch.exchange_bind("DX2", "TX", ""));
    REQUIRE_FALSE(fx.ch.basic_publish(persistent("DQ", "p1", true)));
    REQUIRE_FALSE(fx.ch.basic_publish(persistent("DQ", "t1", false)));
    REQUIRE_FALSE(fx.ch.basic_publish(persistent("DQ", "p2", true)));
    REQUIRE_FALSE(fx.ch.basic_publish(persistent("TQ", "p3", true)));
    REQUIRE_FALSE(fx.ch.basic_publish(persistent("QQ", "t2", false)));
    REQUIRE_FALSE(fx.ch.basic_publish(persistent("QQ", "p4", true)));
    const auto published = fx.broker.counters().published;
    std::vector<in_memory::close_reason> closed;
    fx.conn.on_close([&](const in_memory::close_reason& r) { closed.push_back(r); });

    fx.broker.restart();

    // Every connection dropped with CONNECTION_FORCED.
    CHECK_FALSE(fx.conn.is_open());
    CHECK_FALSE(fx.ch.is_open());
    REQUIRE(closed.size() == 1);
    CHECK(closed[0].code == errc::connection_forced);
    CHECK(fx.broker.connection_count() == 0);
    // Durable topology survives, transient topology does not.
    CHECK(fx.broker.has_exchange("DX"));
    CHECK(fx.broker.has_exchange("DX2"));
    CHECK_FALSE(fx.broker.has_exchange("TX"));
    CHECK(fx.broker.queue_names() == strings{"DQ", "QQ"});
    CHECK(has_binding(fx, "DX", "DQ"));
    CHECK_FALSE(has_binding(fx, "DX", "TQ"));
    CHECK(has_binding(fx, "DX", "DX2"));
    CHECK(has_binding(fx, "DX2", "QQ"));
    // Persistent messages of durable classic queues, and every message of quorum queues.
    CHECK(fx.drain("DQ") == strings{"p1", "p2"});
    CHECK(fx.drain("QQ") == strings{"t2", "p4"});
    CHECK(fx.broker.counters().dropped_of(in_memory::drop_kind::broker_restart) == 2);
    // Counters are kept, and the restarted broker routes through the surviving bindings.
    CHECK(fx.broker.counters().published == published);
    auto conn = fx.broker.connect("after");
    auto ch = conn.open_channel();
    REQUIRE_FALSE(ch.basic_publish(make_message("DX", "", "again")));
    CHECK(fx.drain("DQ") == strings{"again"});
    CHECK(fx.drain("QQ") == strings{"again"}); // through the exchange-to-exchange binding
}

TEST_CASE("after a restart unacknowledged persistent messages come back marked redelivered",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    REQUIRE_FALSE(fx.ch.basic_publish(persistent("Q", "p", true)));
    REQUIRE_FALSE(fx.ch.basic_publish(persistent("Q", "t", false)));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    REQUIRE(r.deliveries.size() == 2);
    CHECK(fx.count("Q") == tru(2, 0, 2));
    fx.broker.restart();
    auto back = fx.drain_deliveries("Q");
    if (type == queue_type::classic) {
        REQUIRE(back.size() == 1);
        CHECK(body_of(back[0]) == "p");
        CHECK(fx.broker.counters().dropped_of(in_memory::drop_kind::broker_restart) == 1);
    } else {
        REQUIRE(back.size() == 2);
        CHECK(fx.broker.counters().dropped_of(in_memory::drop_kind::broker_restart) == 0);
    }
    CHECK(std::all_of(back.begin(), back.end(), [](const auto& d) { return d.redelivered; }));
}

TEST_CASE("a quorum queue must be durable, non-exclusive and not auto-delete, else 406 (§0.3 3)",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue q;
    q.name = "QQ";
    q.arguments = of_type(queue_type::quorum).to_table();
    std::string property;
    SECTION("non-durable") {
        q.durable = false;
        property = "non-durable";
    }
    SECTION("exclusive") {
        q.exclusive = true;
        property = "exclusive-owner";
    }
    SECTION("auto-delete (checked first)") {
        q.auto_delete = true;
        q.durable = false;
        property = "auto-delete";
    }
    CHECK(fx.ch.queue_declare(q) == errc::precondition_failed);
    CHECK(fx.ch.close_reason().text ==
          "PRECONDITION_FAILED - invalid property '" + property + "' for queue 'QQ' in vhost '/'");
    CHECK_FALSE(fx.broker.queue("QQ"));
}

TEST_CASE("sever_all closes every connection and requeues unacknowledged deliveries",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.publish("Q", {"m1", "m2", "m3"});
    CHECK(log.acked() == std::vector<std::uint64_t>{1, 2, 3});
    auto conn2 = fx.broker.connect("consumer");
    auto ch2 = conn2.open_channel();
    recorder r;
    std::error_code ec;
    REQUIRE_FALSE(ch2.basic_qos(2));
    ch2.basic_consume("Q", r.on_delivery(), ec);
    REQUIRE(r.deliveries.size() == 2);
    std::vector<in_memory::close_reason> channel_closed;
    ch2.on_close([&](const in_memory::close_reason& why) { channel_closed.push_back(why); });

    fx.broker.sever_all();

    CHECK(fx.broker.connection_count() == 0);
    CHECK_FALSE(fx.conn.is_open());
    CHECK_FALSE(conn2.is_open());
    CHECK(conn2.close_reason().code == errc::connection_forced);
    REQUIRE(channel_closed.size() == 1);
    CHECK(channel_closed[0].code == errc::connection_forced);
    CHECK(ch2.basic_ack(1) == errc::connection_closed);
    // Confirmed messages are all still there; the two deliveries are back, first, redelivered.
    CHECK(fx.count("Q") == tru(3, 3, 0));
    CHECK(fx.broker.queue("Q")->consumers == 0);
    auto back = fx.drain_deliveries("Q");
    REQUIRE(back.size() == 3);
    CHECK(body_of(back[0]) == "m1");
    CHECK(back[0].redelivered);
    CHECK(back[1].redelivered);
    CHECK_FALSE(back[2].redelivered);
}

TEST_CASE("nack_nth_publish refuses exactly the n-th publish from now", "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.broker.nack_nth_publish(2);
    fx.publish("Q", {"m1", "m2", "m3"});
    CHECK(log.events == strings{"ack:1", "nack:2", "ack:3"});
    CHECK(fx.drain("Q") == strings{"m1", "m3"});
    CHECK(fx.broker.counters().confirms_nacked == 1);
    CHECK(fx.ch.is_open());
    SECTION("outside confirm mode the refused publish just disappears") {
        auto plain = fx.open_channel();
        fx.broker.nack_nth_publish(1);
        REQUIRE_FALSE(plain.basic_publish(make_message("", "Q", "lost")));
        REQUIRE_FALSE(plain.basic_publish(make_message("", "Q", "kept")));
        CHECK(fx.drain("Q") == strings{"kept"});
    }
    SECTION("0 disarms") {
        fx.broker.nack_nth_publish(1);
        fx.broker.nack_nth_publish(0);
        fx.publish("Q", "m4");
        CHECK(log.nacked() == std::vector<std::uint64_t>{2});
        CHECK(fx.drain("Q") == strings{"m4"});
    }
}

TEST_CASE("lose_nth_confirm stores the message, loses its confirm and drops the connection",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    auto sibling = fx.open_channel();
    std::vector<in_memory::close_reason> closed;
    fx.conn.on_close([&](const in_memory::close_reason& r) { closed.push_back(r); });
    fx.broker.lose_nth_confirm(2);
    fx.publish("Q", "m1");
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("", "Q", "m2")));
    CHECK(log.events == strings{"ack:1"});
    CHECK(fx.drain("Q") == strings{"m1", "m2"});
    CHECK_FALSE(fx.conn.is_open());
    CHECK_FALSE(sibling.is_open());
    REQUIRE(closed.size() == 1);
    CHECK(closed[0].code == errc::connection_forced);
    CHECK(fx.broker.counters().confirms_lost == 1);
    CHECK(fx.ch.basic_publish(make_message("", "Q", "m3")) == errc::connection_closed);
}

TEST_CASE("an exclusive queue is locked to its connection and deleted with it",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue q;
    q.name = "mine";
    q.exclusive = true;
    q.durable = false;
    REQUIRE_FALSE(fx.ch.queue_declare(q));
    fx.publish("mine", {"m1", "m2"});
    auto other_conn = fx.broker.connect("other");
    auto other = other_conn.open_channel();
    std::error_code ec;
    CHECK_FALSE(other.basic_get("mine", ec));
    CHECK(ec == errc::resource_locked);
    CHECK(other.close_reason().text ==
          "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'mine' in vhost "
          "'/'. It could be originally declared on another connection or the exclusive property "
          "value does not match that of the original declaration.");
    CHECK(letterbox::amqp_reply_code(errc::resource_locked) == 405);
    other = other_conn.open_channel();
    recorder r;
    other.basic_consume("mine", r.on_delivery(), ec);
    CHECK(ec == errc::resource_locked);
    // Publishing to it from another connection is allowed (only the queue methods are locked).
    auto third = other_conn.open_channel();
    REQUIRE_FALSE(third.basic_publish(make_message("", "mine", "m3")));
    CHECK(fx.count("mine") == tru(3, 3, 0));
    // A second channel of the owning connection may use it.
    auto own = fx.open_channel();
    REQUIRE(own.basic_get("mine", ec));
    fx.conn.close();
    CHECK_FALSE(fx.broker.queue("mine"));
    CHECK(fx.broker.counters().dropped_of(in_memory::drop_kind::queue_deleted) == 3);
}

TEST_CASE("an auto-delete queue is deleted when its last consumer goes away, not before",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue q;
    q.name = "auto";
    q.auto_delete = true;
    q.durable = false;
    REQUIRE_FALSE(fx.ch.queue_declare(q));
    fx.publish("auto", "m1");
    REQUIRE(fx.broker.queue("auto")); // never had a consumer: stays
    recorder a, b;
    std::error_code ec;
    in_memory::basic_consume_options oa, ob;
    oa.consumer_tag = "a";
    ob.consumer_tag = "b";
    auto other = fx.open_channel();
    fx.ch.basic_consume("auto", a.on_delivery(), ec, oa);
    other.basic_consume("auto", b.on_delivery(), ec, ob);
    SECTION("cancelling both") {
        REQUIRE_FALSE(fx.ch.basic_cancel("a"));
        CHECK(fx.broker.queue("auto"));
        REQUIRE_FALSE(other.basic_cancel("b"));
        CHECK_FALSE(fx.broker.queue("auto"));
    }
    SECTION("cancelling one and closing the other's channel") {
        REQUIRE_FALSE(other.basic_cancel("b"));
        CHECK(fx.broker.queue("auto"));
        fx.ch.close();
        CHECK_FALSE(fx.broker.queue("auto"));
    }
    CHECK(fx.broker.counters().dropped_of(in_memory::drop_kind::queue_deleted) == 1);
}

TEST_CASE("RMQ-ACK-18 deleting a queue sends basic.cancel to its consumers and keeps their "
          "channels open",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", {"m1", "m2"});
    auto consumer = fx.open_channel();
    REQUIRE_FALSE(consumer.basic_qos(1));
    recorder r;
    std::error_code ec;
    in_memory::basic_consume_options opts;
    opts.consumer_tag = "watcher";
    consumer.basic_consume("Q", r.on_delivery(), ec, opts, r.on_cancel());
    REQUIRE(r.deliveries.size() == 1);
    CHECK(fx.ch.queue_delete("Q", ec) == 1);
    REQUIRE_FALSE(ec);
    CHECK(r.cancelled == strings{"watcher"});
    CHECK_FALSE(fx.broker.queue("Q"));
    CHECK(consumer.is_open());
    // The delivery it still holds can be acked without an error.
    CHECK_FALSE(consumer.basic_ack(r.last_tag()));
    CHECK(consumer.is_open());
    CHECK(fx.broker.counters().dropped_of(in_memory::drop_kind::queue_deleted) == 2);
    // A cancelled consumer's tag is free again on that channel.
    fx.declare_queue("Q2");
    consumer.basic_consume("Q2", r.on_delivery(), ec, opts);
    CHECK_FALSE(ec);
}

} // namespace unit_transport_in_memory_durability_and_faults
