// SPDX-License-Identifier: BSL-1.0
// Consuming, acknowledging, prefetch, publisher confirms and returns in the RabbitMQ model
// (research/reliability-anchors.md A2, A3, A4; §0.3 1, 3, 10, 14).

#include <letterbox/transport/in_memory/broker.hpp>

#include "scenario_fixture.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace unit_transport_in_memory_consuming {

using namespace broker_scenarios;

namespace {

using queue_type = topology::queue_type;

} // namespace

// ---- A2: consuming and acknowledging ----------------------------------------------------------

TEST_CASE("RMQ-ACK-01 a published message is counted ready", "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    CHECK(fx.count("Q") == tru(1, 1, 0));
}

TEST_CASE("RMQ-ACK-02 a got message is unacked until its channel closes, then ready again",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    auto d = fx.get("Q");
    REQUIRE(d);
    CHECK_FALSE(d->redelivered);
    CHECK(fx.count("Q") == tru(1, 0, 1));
    fx.ch.close();
    CHECK(fx.count("Q") == tru(1, 1, 0));
    auto again = fx.drain_deliveries("Q");
    REQUIRE(again.size() == 1);
    CHECK(again[0].redelivered);
}

TEST_CASE("RMQ-ACK-03 get on an empty queue is get-empty and a later publish can be got",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    CHECK_FALSE(fx.get("Q"));
    CHECK(fx.ch.is_open());
    fx.publish("Q", "m1");
    auto d = fx.get("Q", true);
    REQUIRE(d);
    CHECK(body_of(*d) == "m1");
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("RMQ-ACK-04 get with no-ack removes the message at delivery", "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    REQUIRE(fx.get("Q", true));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    fx.ch.close();
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("RMQ-ACK-05 a consumer delivery is first-time and returns to ready when the channel "
          "closes",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    REQUIRE_FALSE(fx.ch.basic_qos(10));
    recorder r;
    std::error_code ec;
    const auto tag = fx.ch.basic_consume("Q", r.on_delivery(), ec);
    REQUIRE_FALSE(ec);
    REQUIRE(r.deliveries.size() == 1);
    CHECK_FALSE(r.deliveries[0].redelivered);
    CHECK(r.deliveries[0].consumer_tag == tag);
    CHECK(r.deliveries[0].delivery_tag == 1);
    CHECK(fx.count("Q") == tru(1, 0, 1));
    fx.ch.close();
    CHECK(fx.count("Q") == tru(1, 1, 0));
}

TEST_CASE("RMQ-ACK-06 a no-ack consumer receives everything and leaves nothing",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", {"m1", "m2"});
    recorder r;
    std::error_code ec;
    in_memory::basic_consume_options opts;
    opts.no_ack = true;
    fx.ch.basic_consume("Q", r.on_delivery(), ec, opts);
    REQUIRE_FALSE(ec);
    CHECK(r.bodies() == std::vector<std::string>{"m1", "m2"});
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.ch.unacked_count() == 0);
}

TEST_CASE("RMQ-ACK-07 ack settles a got or consumed message", "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    std::uint64_t tag = 0;
    recorder r;
    SECTION("basic.get") {
        auto d = fx.get("Q");
        REQUIRE(d);
        tag = d->delivery_tag;
    }
    SECTION("basic.consume") {
        std::error_code ec;
        fx.ch.basic_consume("Q", r.on_delivery(), ec);
        REQUIRE(r.deliveries.size() == 1);
        tag = r.last_tag();
    }
    CHECK(fx.count("Q") == tru(1, 0, 1));
    REQUIRE_FALSE(fx.ch.basic_ack(tag));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.broker.counters().acked == 1);
}

TEST_CASE("RMQ-ACK-08 a multiple ack settles every outstanding tag up to it",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", {"m1", "m2", "m3"});
    recorder r;
    std::uint64_t last = 0;
    SECTION("basic.get") {
        for (int i = 0; i < 3; ++i)
            last = fx.get("Q")->delivery_tag;
    }
    SECTION("basic.consume") {
        std::error_code ec;
        fx.ch.basic_consume("Q", r.on_delivery(), ec);
        REQUIRE(r.deliveries.size() == 3);
        last = r.last_tag();
    }
    CHECK(last == 3);
    CHECK(fx.count("Q") == tru(3, 0, 3));
    REQUIRE_FALSE(fx.ch.basic_ack(last, true));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.ch.unacked_count() == 0);
}

TEST_CASE("RMQ-ACK-09 nack with requeue makes a got message ready again",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", {"m1", "m2"});
    auto d = fx.get("Q");
    CHECK(fx.count("Q") == tru(2, 1, 1));
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, true));
    CHECK(fx.count("Q") == tru(2, 2, 0));
    CHECK(fx.broker.counters().requeued == 1);
}

TEST_CASE("RMQ-ACK-10 nack without requeue and without a DLX discards the message",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    recorder r;
    std::uint64_t tag = 0;
    SECTION("basic.get") {
        tag = fx.get("Q")->delivery_tag;
    }
    SECTION("basic.consume") {
        std::error_code ec;
        fx.ch.basic_consume("Q", r.on_delivery(), ec);
        tag = r.last_tag();
    }
    REQUIRE_FALSE(fx.ch.basic_nack(tag, false, false));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.broker.counters().discarded_of(in_memory::dead_letter_reason::rejected) == 1);
    CHECK(fx.broker.counters().dead_lettered_of(in_memory::dead_letter_reason::rejected) == 0);
}

TEST_CASE("RMQ-ACK-11 a multiple nack with requeue makes all got messages ready",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", {"m1", "m2", "m3"});
    for (int i = 0; i < 3; ++i)
        REQUIRE(fx.get("Q"));
    CHECK(fx.count("Q") == tru(3, 0, 3));
    REQUIRE_FALSE(fx.ch.basic_nack(3, true, true));
    CHECK(fx.count("Q") == tru(3, 3, 0));
    CHECK(fx.drain("Q") == std::vector<std::string>{"m1", "m2", "m3"});
}

TEST_CASE("RMQ-ACK-12 a multiple nack without requeue discards all", "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", {"m1", "m2", "m3"});
    recorder r;
    SECTION("basic.get") {
        for (int i = 0; i < 3; ++i)
            REQUIRE(fx.get("Q"));
    }
    SECTION("basic.consume") {
        std::error_code ec;
        fx.ch.basic_consume("Q", r.on_delivery(), ec);
        REQUIRE(r.deliveries.size() == 3);
    }
    REQUIRE_FALSE(fx.ch.basic_nack(3, true, false));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.broker.counters().discarded_of(in_memory::dead_letter_reason::rejected) == 3);
}

TEST_CASE("RMQ-ACK-13 a nacked consumer delivery comes back to the same consumer marked "
          "redelivered",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    recorder r;
    std::error_code ec;
    const auto tag = fx.ch.basic_consume("Q", r.on_delivery(), ec);
    REQUIRE(r.deliveries.size() == 1);
    REQUIRE_FALSE(fx.ch.basic_nack(r.last_tag(), false, true));
    REQUIRE(r.deliveries.size() == 2);
    CHECK(r.redelivered_flags() == std::vector<bool>{false, true});
    CHECK(r.deliveries[1].consumer_tag == tag);
    CHECK(r.deliveries[1].delivery_tag == 2);
    REQUIRE_FALSE(fx.ch.basic_ack(2));
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("RMQ-ACK-14 a multiple nack with requeue redelivers all three marked redelivered",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", {"m1", "m2", "m3"});
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    REQUIRE(r.deliveries.size() == 3);
    REQUIRE_FALSE(fx.ch.basic_nack(3, true, true));
    REQUIRE(r.deliveries.size() == 6);
    CHECK(r.bodies() == std::vector<std::string>{"m1", "m2", "m3", "m1", "m2", "m3"});
    CHECK(r.redelivered_flags() == std::vector<bool>{false, false, false, true, true, true});
    REQUIRE_FALSE(fx.ch.basic_ack(r.last_tag(), true));
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("RMQ-ACK-15 basic.cancel stops deliveries but keeps unacked deliveries unacked",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    recorder r;
    std::error_code ec;
    in_memory::basic_consume_options opts;
    opts.consumer_tag = "ctag";
    CHECK(fx.ch.basic_consume("Q", r.on_delivery(), ec, opts) == "ctag");
    REQUIRE(r.deliveries.size() == 1);
    REQUIRE_FALSE(fx.ch.basic_cancel("ctag"));
    CHECK(fx.broker.queue("Q")->consumers == 0);
    CHECK(fx.count("Q") == tru(1, 0, 1));
    fx.publish("Q", {"m2", "m3"});
    CHECK(r.deliveries.size() == 1);
    CHECK(fx.count("Q") == tru(3, 2, 1));
    REQUIRE_FALSE(fx.ch.basic_ack(r.last_tag()));
    CHECK(fx.count("Q") == tru(2, 2, 0));
}

TEST_CASE("RMQ-ACK-16 purge removes only ready messages and reports their count",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", {"m1", "m2"});
    auto d = fx.get("Q");
    std::error_code ec;
    CHECK(fx.ch.queue_purge("Q", ec) == 1);
    REQUIRE_FALSE(ec);
    CHECK(fx.count("Q") == tru(1, 0, 1));
    CHECK(fx.broker.counters().dropped_of(in_memory::drop_kind::purged) == 1);
    // The unacked one survives and can still be requeued.
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, true));
    CHECK(fx.drain("Q") == std::vector<std::string>{"m1"});
}

TEST_CASE("RMQ-ACK-17 basic.recover requeues unacked deliveries and redelivers to the same "
          "consumer",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    SECTION("after basic.get") {
        REQUIRE(fx.get("Q"));
        CHECK(fx.count("Q") == tru(1, 0, 1));
        REQUIRE_FALSE(fx.ch.basic_recover(true));
        CHECK(fx.count("Q") == tru(1, 1, 0));
        auto d = fx.get("Q");
        REQUIRE(d);
        CHECK(d->redelivered);
    }
    SECTION("with a consumer") {
        recorder r;
        std::error_code ec;
        const auto tag = fx.ch.basic_consume("Q", r.on_delivery(), ec);
        REQUIRE_FALSE(fx.ch.basic_recover(true));
        REQUIRE(r.deliveries.size() == 2);
        CHECK(r.deliveries[1].redelivered);
        CHECK(r.deliveries[1].consumer_tag == tag);
        CHECK(fx.count("Q") == tru(1, 0, 1));
    }
    SECTION("requeue=false is refused with 540, which closes the whole connection") {
        auto other = fx.open_channel();
        REQUIRE(fx.get("Q"));
        CHECK(fx.ch.basic_recover(false) == errc::not_implemented);
        CHECK_FALSE(fx.ch.is_open());
        CHECK_FALSE(other.is_open());
        CHECK_FALSE(fx.conn.is_open());
        CHECK(fx.conn.close_reason().code == errc::not_implemented);
        CHECK(fx.conn.close_reason().text == "NOT_IMPLEMENTED - requeue=false");
        CHECK(fx.count("Q") == tru(1, 1, 0)); // the lost connection's delivery is back
    }
}

TEST_CASE("RMQ-ACK-19 a multiple nack on one channel redelivers messages one to three in order",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    publish_numbered(fx, "Q", 1, 4);
    REQUIRE(r.deliveries.size() == 4);
    REQUIRE_FALSE(fx.ch.basic_nack(r.deliveries[2].delivery_tag, true, true));
    REQUIRE(r.deliveries.size() == 7);
    CHECK(r.bodies() == std::vector<std::string>{"m1", "m2", "m3", "m4", "m1", "m2", "m3"});
    CHECK(fx.count("Q") == tru(4, 0, 4));
    REQUIRE_FALSE(fx.ch.basic_ack(r.last_tag(), true));
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("RMQ-ACK-20 closing one of two round-robin channels redelivers its messages to the "
          "other in order",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    auto ch1 = fx.open_channel();
    auto ch2 = fx.open_channel();
    recorder c1, c2;
    std::error_code ec;
    ch1.basic_consume("Q", c1.on_delivery(), ec);
    ch2.basic_consume("Q", c2.on_delivery(), ec);
    publish_numbered(fx, "Q", 1, 4);
    CHECK(c1.bodies() == std::vector<std::string>{"m1", "m3"});
    CHECK(c2.bodies() == std::vector<std::string>{"m2", "m4"});
    ch1.close();
    CHECK(c2.bodies() == std::vector<std::string>{"m2", "m4", "m1", "m3"});
    CHECK(c2.redelivered_flags() == std::vector<bool>{false, false, true, true});
    REQUIRE_FALSE(ch2.basic_ack(c2.last_tag(), true));
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("RMQ-ACK-21 a double ack, an unknown tag or a tag from another channel closes that "
          "channel with 406",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    fx.publish("Q", {"m1", "m2"});
    auto other = fx.open_channel();
    auto d = fx.get("Q");
    REQUIRE(d);
    SECTION("double ack") {
        REQUIRE_FALSE(fx.ch.basic_ack(d->delivery_tag));
        CHECK(fx.ch.basic_ack(d->delivery_tag) == errc::precondition_failed);
        CHECK(fx.ch.close_reason().text == "PRECONDITION_FAILED - unknown delivery tag 1");
        CHECK(other.is_open());
    }
    SECTION("unknown tag") {
        CHECK(fx.ch.basic_ack(42) == errc::precondition_failed);
        CHECK(fx.ch.close_reason().text == "PRECONDITION_FAILED - unknown delivery tag 42");
        // Closing requeued the delivery.
        CHECK(fx.count("Q") == tru(2, 2, 0));
    }
    SECTION("a tag from another channel") {
        CHECK(other.basic_ack(d->delivery_tag) == errc::precondition_failed);
        CHECK(other.close_reason().text == "PRECONDITION_FAILED - unknown delivery tag 1");
        CHECK_FALSE(other.is_open());
        // The right channel is unaffected and still owns the delivery.
        CHECK(fx.ch.is_open());
        CHECK(fx.count("Q") == tru(2, 1, 1));
        REQUIRE_FALSE(fx.ch.basic_ack(d->delivery_tag));
    }
    SECTION("nack and reject of unknown tags too") {
        CHECK(fx.ch.basic_reject(7, true) == errc::precondition_failed);
        CHECK(fx.ch.close_reason().text == "PRECONDITION_FAILED - unknown delivery tag 7");
        CHECK(other.basic_nack(9, false, true) == errc::precondition_failed);
        CHECK(other.close_reason().text == "PRECONDITION_FAILED - unknown delivery tag 9");
    }
    CHECK(fx.conn.is_open());
}

TEST_CASE("RMQ-ACK-22 nack of tag 0 with multiple settles every outstanding delivery in delivery "
          "order",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::fanout);
    fx.declare_queue("DLQ");
    fx.bind("DLQ", "dlx", "");
    fx.declare_queue("Q", dlx_args("dlx"));
    fx.publish("Q", {"m1", "m2"});
    REQUIRE(fx.get("Q"));
    REQUIRE(fx.get("Q"));
    REQUIRE_FALSE(fx.ch.basic_nack(0, true, false));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.drain("DLQ") == std::vector<std::string>{"m1", "m2"});
    // Ack of tag 0 with multiple on an empty set is fine too.
    CHECK_FALSE(fx.ch.basic_ack(0, true));
    CHECK(fx.ch.is_open());
}

namespace {

// RMQ-ACK-23/24 (b): 100 messages consumed, the consumer cancelled (unacked deliveries stay
// unacked), each tag nacked with requeue in a random order, then consumed again.
std::vector<std::string> redelivery_after_random_nacks(broker_fixture& fx, queue_type type,
                                                       std::vector<std::string>& nack_order) {
    auto args = of_type(type);
    if (type == queue_type::quorum)
        args.delivery_limit = 3;
    fx.declare_queue("Q", args);
    publish_numbered(fx, "Q", 1, 100);
    recorder first;
    std::error_code ec;
    in_memory::basic_consume_options opts;
    opts.consumer_tag = "first";
    fx.ch.basic_consume("Q", first.on_delivery(), ec, opts);
    REQUIRE(first.deliveries.size() == 100);
    REQUIRE_FALSE(fx.ch.basic_cancel("first"));
    std::vector<in_memory::basic_delivery> order = first.deliveries;
    std::mt19937_64 rng(20240519);
    std::shuffle(order.begin(), order.end(), rng);
    for (const auto& d : order) {
        nack_order.push_back(body_of(d));
        REQUIRE_FALSE(fx.ch.basic_nack(d.delivery_tag, false, true));
    }
    CHECK(fx.count("Q") == tru(100, 100, 0));
    recorder second;
    fx.ch.basic_consume("Q", second.on_delivery(), ec);
    REQUIRE(second.deliveries.size() == 100);
    CHECK(std::all_of(second.deliveries.begin(), second.deliveries.end(),
                      [](const auto& d) { return d.redelivered; }));
    REQUIRE_FALSE(fx.ch.basic_ack(second.last_tag(), true));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    return second.bodies();
}

} // namespace

TEST_CASE("RMQ-ACK-23 a quorum queue redelivers a multiple nack in original order and single "
          "nacks in nack order",
          "[transport][in_memory]") {
    SECTION("(a) nack(tag 100, multiple, requeue)") {
        broker_fixture fx;
        auto args = of_type(queue_type::quorum);
        args.delivery_limit = 3;
        fx.declare_queue("Q", args);
        publish_numbered(fx, "Q", 1, 100);
        recorder r;
        std::error_code ec;
        fx.ch.basic_consume("Q", r.on_delivery(), ec);
        REQUIRE(r.deliveries.size() == 100);
        REQUIRE_FALSE(fx.ch.basic_nack(100, true, true));
        REQUIRE(r.deliveries.size() == 200);
        const auto bodies = r.bodies();
        CHECK(std::vector<std::string>(bodies.begin() + 100, bodies.end()) == numbered(1, 100));
        REQUIRE_FALSE(fx.ch.basic_ack(r.last_tag(), true));
        CHECK(fx.count("Q") == tru(0, 0, 0));
    }
    SECTION("(b) single nacks in a random order (3.10: back of the queue, in nack order)") {
        broker_fixture fx;
        std::vector<std::string> nack_order;
        const auto redelivered = redelivery_after_random_nacks(fx, queue_type::quorum, nack_order);
        CHECK(redelivered == nack_order);
        CHECK(redelivered != numbered(1, 100));
    }
    SECTION("(b) on the 4.0 profile returns are served first, in return order") {
        broker_fixture fx(in_memory::broker_profile::rabbitmq_4_0());
        std::vector<std::string> nack_order;
        CHECK(redelivery_after_random_nacks(fx, queue_type::quorum, nack_order) == nack_order);
    }
}

TEST_CASE("a quorum queue with a delivery limit puts a nacked or rejected message back at the "
          "front, in return order, and without a limit at the back (§0.3 1)",
          "[transport][in_memory]") {
    const bool limited = GENERATE(true, false);
    INFO("delivery limit: " << (limited ? "5" : "none"));
    broker_fixture fx;
    auto args = of_type(queue_type::quorum);
    if (limited)
        args.delivery_limit = 5;
    fx.declare_queue("Q", args);
    publish_numbered(fx, "Q", 1, 5);
    auto m1 = fx.get("Q");
    auto m2 = fx.get("Q");
    auto m3 = fx.get("Q");
    REQUIRE((m1 && m2 && m3));
    REQUIRE_FALSE(fx.ch.basic_nack(m3->delivery_tag, false, true));
    REQUIRE_FALSE(fx.ch.basic_reject(m1->delivery_tag, true));
    REQUIRE_FALSE(fx.ch.basic_ack(m2->delivery_tag));
    const auto got = fx.drain_deliveries("Q");
    std::vector<std::string> bodies;
    std::vector<std::int64_t> counts;
    for (const auto& d : got) {
        bodies.push_back(body_of(d));
        counts.push_back(
            d.msg->headers.get<std::int64_t>(letterbox::headers::x_delivery_count).value_or(-1));
    }
    if (limited) {
        CHECK(bodies == std::vector<std::string>{"m3", "m1", "m4", "m5"});
        CHECK(counts == std::vector<std::int64_t>{1, 1, 0, 0});
    } else {
        CHECK(bodies == std::vector<std::string>{"m4", "m5", "m3", "m1"});
        CHECK(counts == std::vector<std::int64_t>{0, 0, 1, 1});
    }
}

TEST_CASE("basic.get's message count leaves out the expired messages right behind the head of "
          "a classic queue, and a 3.10 quorum queue counts them",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "head");
    for (const char* body : {"e1", "e2"}) {
        auto m = make_message("", "Q", body);
        m.properties.expiration = "50";
        REQUIRE_FALSE(fx.ch.basic_publish(m));
    }
    fx.publish("Q", "tail");
    fx.advance(300ms);
    CHECK(fx.count("Q") == tru(4, 4, 0)); // expired, but not yet at the head
    auto head = fx.get("Q");
    REQUIRE(head);
    CHECK(body_of(*head) == "head");
    // Both seen on 3.10.8 (get_message_count_skips_an_expired_run in amqp_differential.cpp).
    const bool classic = type == queue_type::classic;
    CHECK(head->message_count == (classic ? 1U : 3U));
    if (classic)
        CHECK(fx.count("Q") == tru(2, 1, 1));
    auto tail = fx.get("Q");
    REQUIRE(tail);
    CHECK(body_of(*tail) == "tail");
    CHECK(tail->message_count == 0);
}

TEST_CASE("RMQ-ACK-24 a classic queue puts requeued messages back in their original position",
          "[transport][in_memory]") {
    broker_fixture fx;
    std::vector<std::string> nack_order;
    CHECK(redelivery_after_random_nacks(fx, queue_type::classic, nack_order) == numbered(1, 100));
    CHECK(nack_order != numbered(1, 100));
}

TEST_CASE("RMQ-ACK-25 every kind of redelivery sets the redelivered flag and first deliveries do "
          "not",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    auto first = fx.get("Q");
    REQUIRE(first);
    CHECK_FALSE(first->redelivered);
    SECTION("nack requeue") {
        REQUIRE_FALSE(fx.ch.basic_nack(first->delivery_tag, false, true));
    }
    SECTION("reject requeue") {
        REQUIRE_FALSE(fx.ch.basic_reject(first->delivery_tag, true));
    }
    SECTION("recover") {
        REQUIRE_FALSE(fx.ch.basic_recover());
    }
    SECTION("channel close") {
        fx.ch.close();
    }
    SECTION("connection close") {
        fx.conn.close();
    }
    // A redelivery may go to another consumer, on another connection.
    auto conn2 = fx.broker.connect("other");
    auto ch2 = conn2.open_channel();
    recorder r;
    std::error_code ec;
    ch2.basic_consume("Q", r.on_delivery(), ec);
    REQUIRE(r.deliveries.size() == 1);
    CHECK(r.deliveries[0].redelivered);
    CHECK(fx.broker.counters().redelivered == 1);
}

// ---- A3: prefetch -------------------------------------------------------------------------------

TEST_CASE("RMQ-PF-01 a consumer holds at most its prefetch and each ack releases that many more",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    REQUIRE_FALSE(fx.ch.basic_qos(3));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    publish_numbered(fx, "Q", 1, 10);
    CHECK(r.deliveries.size() == 3);
    CHECK(fx.count("Q") == tru(10, 7, 3));
    REQUIRE_FALSE(fx.ch.basic_ack(1));
    CHECK(r.deliveries.size() == 4);
    REQUIRE_FALSE(fx.ch.basic_ack(3, true));
    CHECK(r.deliveries.size() == 6);
    CHECK(fx.ch.unacked_count() == 3);
    REQUIRE_FALSE(fx.ch.basic_nack(r.last_tag(), true, false));
    CHECK(r.deliveries.size() == 9);
    CHECK(r.bodies() == numbered(1, 9));
}

TEST_CASE("RMQ-PF-02 prefetch 0 is unlimited", "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_qos(0));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    publish_numbered(fx, "Q", 1, 500);
    CHECK(r.deliveries.size() == 500);
    CHECK(fx.count("Q") == tru(500, 0, 500));
}

TEST_CASE("RMQ-PF-03 two consumers on one channel each hold their own prefetch",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_qos(10));
    recorder a, b;
    std::error_code ec;
    fx.ch.basic_consume("Q", a.on_delivery(), ec);
    fx.ch.basic_consume("Q", b.on_delivery(), ec);
    publish_numbered(fx, "Q", 1, 30);
    CHECK(a.deliveries.size() == 10);
    CHECK(b.deliveries.size() == 10);
    CHECK(fx.count("Q") == tru(30, 10, 20));
}

TEST_CASE("RMQ-PF-04 per-consumer then global qos enforces both limits", "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_qos(10, false));
    REQUIRE_FALSE(fx.ch.basic_qos(15, true));
    recorder a, b;
    std::error_code ec;
    fx.ch.basic_consume("Q", a.on_delivery(), ec);
    fx.ch.basic_consume("Q", b.on_delivery(), ec);
    publish_numbered(fx, "Q", 1, 40);
    CHECK(a.deliveries.size() + b.deliveries.size() == 15);
    CHECK(a.deliveries.size() <= 10);
    CHECK(b.deliveries.size() <= 10);
    // After everything is acked the channel fills up to the global limit again.
    REQUIRE_FALSE(fx.ch.basic_ack(0, true));
    CHECK(fx.ch.unacked_count() == 15);
}

TEST_CASE("qos global then per-consumer clears the global limit on 3.10 (§0.3 10)",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_qos(15, true));
    REQUIRE_FALSE(fx.ch.basic_qos(10, false));
    recorder a, b;
    std::error_code ec;
    fx.ch.basic_consume("Q", a.on_delivery(), ec);
    fx.ch.basic_consume("Q", b.on_delivery(), ec);
    publish_numbered(fx, "Q", 1, 40);
    CHECK(a.deliveries.size() == 10);
    CHECK(b.deliveries.size() == 10);
}

TEST_CASE("qos global alone limits all consumers of the channel together",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q1");
    fx.declare_queue("Q2");
    REQUIRE_FALSE(fx.ch.basic_qos(5, true));
    recorder a, b;
    std::error_code ec;
    fx.ch.basic_consume("Q1", a.on_delivery(), ec);
    fx.ch.basic_consume("Q2", b.on_delivery(), ec);
    publish_numbered(fx, "Q1", 1, 10);
    publish_numbered(fx, "Q2", 1, 10);
    CHECK(a.deliveries.size() + b.deliveries.size() == 5);
    CHECK(fx.ch.unacked_count() == 5);
}

TEST_CASE("qos per-consumer applies only to consumers created after it (§0.3 10)",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_qos(2));
    recorder early;
    std::error_code ec;
    fx.ch.basic_consume("Q", early.on_delivery(), ec);
    publish_numbered(fx, "Q", 1, 6);
    CHECK(early.deliveries.size() == 2);
    // Raising it later does not help the existing consumer...
    REQUIRE_FALSE(fx.ch.basic_qos(10));
    publish_numbered(fx, "Q", 7, 8);
    CHECK(early.deliveries.size() == 2);
    // ...and lowering it does not throttle one created with a larger value.
    broker_fixture f2;
    f2.declare_queue("Q");
    REQUIRE_FALSE(f2.ch.basic_qos(5));
    recorder big;
    f2.ch.basic_consume("Q", big.on_delivery(), ec);
    REQUIRE_FALSE(f2.ch.basic_qos(1));
    publish_numbered(f2, "Q", 1, 8);
    CHECK(big.deliveries.size() == 5);
}

TEST_CASE("RMQ-PF-04 global qos on a quorum queue fails the consume with 540 NOT_IMPLEMENTED",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("QQ", of_type(queue_type::quorum));
    REQUIRE_FALSE(fx.ch.basic_qos(10, true));
    recorder r;
    std::error_code ec;
    auto other = fx.open_channel();
    fx.ch.basic_consume("QQ", r.on_delivery(), ec);
    CHECK(ec == errc::not_implemented);
    CHECK(fx.ch.close_reason().code == errc::not_implemented);
    CHECK(fx.ch.close_reason().text ==
          "NOT_IMPLEMENTED - queue 'QQ' in vhost '/' does not support global qos");
    CHECK(letterbox::amqp_reply_code(errc::not_implemented) == 540);
    CHECK(fx.broker.queue("QQ")->consumers == 0);
    // 540 is a hard error: the connection closes, with every channel on it (§0.3 3).
    CHECK_FALSE(fx.conn.is_open());
    CHECK_FALSE(other.is_open());
    CHECK(fx.conn.close_reason().text == fx.ch.close_reason().text);
    // 3.10: a later per-consumer qos clears the global one, and then the consume works.
    fx.conn = fx.broker.connect("again");
    fx.ch = fx.open_channel();
    REQUIRE_FALSE(fx.ch.basic_qos(10, true));
    REQUIRE_FALSE(fx.ch.basic_qos(2, false));
    fx.ch.basic_consume("QQ", r.on_delivery(), ec);
    CHECK_FALSE(ec);
}

TEST_CASE("RMQ-PF-04 on the 4.3 profile, global qos is denied and acts as a per-consumer "
          "limit, so a quorum queue's consume works",
          "[transport][in_memory]") {
    // RabbitMQ 4.3.0 denies the deprecated feature global_qos by default (release notes).
    broker_fixture fx(in_memory::broker_profile::rabbitmq_4_3());
    fx.declare_queue("QQ", of_type(queue_type::quorum));
    REQUIRE_FALSE(fx.ch.basic_qos(2, true));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("QQ", r.on_delivery(), ec);
    CHECK_FALSE(ec);
    fx.publish("QQ", {"m1", "m2", "m3"});
    CHECK(r.deliveries.size() == 2);
    CHECK(fx.conn.is_open());
}

TEST_CASE("a channel whose connection a 540 closed answers connection_closed after the "
          "connection's last handle is gone",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("QQ", of_type(queue_type::quorum));
    auto ch = fx.open_channel();
    REQUIRE_FALSE(ch.basic_qos(10, true));
    recorder r;
    std::error_code ec;
    ch.basic_consume("QQ", r.on_delivery(), ec);
    REQUIRE(ec == errc::not_implemented);
    fx.conn = fx.broker.connect("again"); // drops the closed connection (under ASan: no reuse)
    fx.ch = fx.open_channel();
    CHECK(ch.basic_qos(1) == errc::connection_closed);
    CHECK_FALSE(ch.is_open());
}

TEST_CASE("RMQ-PF-05 basic.get is not limited by qos", "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    publish_numbered(fx, "Q", 1, 3);
    REQUIRE_FALSE(fx.ch.basic_qos(1, false));
    REQUIRE_FALSE(fx.ch.basic_qos(1, true));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    CHECK(r.deliveries.size() == 1);
    CHECK(fx.get_body("Q") == "m2");
    CHECK(fx.get_body("Q") == "m3");
    CHECK(fx.ch.unacked_count() == 3);
}

TEST_CASE("RMQ-PF-06 lowering the global prefetch lets outstanding deliveries drain first",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_qos(5, true));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    publish_numbered(fx, "Q", 1, 20);
    REQUIRE(r.deliveries.size() == 5);
    REQUIRE_FALSE(fx.ch.basic_qos(2, true));
    CHECK(fx.ch.unacked_count() == 5);
    for (std::uint64_t tag = 1; tag <= 3; ++tag)
        REQUIRE_FALSE(fx.ch.basic_ack(tag));
    CHECK(r.deliveries.size() == 5); // 2 outstanding: at the new limit
    REQUIRE_FALSE(fx.ch.basic_ack(4));
    CHECK(r.deliveries.size() == 6);
    CHECK(fx.ch.unacked_count() == 2);
}

TEST_CASE("RMQ-PF-08 a consumer is listed on its queue with the prefetch it was created with",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_qos(10));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    CHECK(fx.broker.queue("Q")->consumers == 1);
    topology::queue passive;
    passive.name = "Q";
    CHECK(fx.ch.queue_declare(passive, ec, true).consumer_count == 1);
    publish_numbered(fx, "Q", 1, 12);
    CHECK(r.deliveries.size() == 10); // ack required, prefetch 10
}

TEST_CASE("quorum queues have no prefetch cap on 3.10: prefetch 2100 receives 2100 (§0.3 3)",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("QQ", of_type(queue_type::quorum));
    publish_numbered(fx, "QQ", 1, 2100);
    REQUIRE_FALSE(fx.ch.basic_qos(2100));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("QQ", r.on_delivery(), ec);
    CHECK(r.deliveries.size() == 2100);
    CHECK(fx.count("QQ") == tru(2100, 0, 2100));
}

namespace {

// One simulated worker for RMQ-PF-07: it processes its deliveries one at a time, each taking
// `cost` of virtual time, and acks when done.
struct worker {
    worker(broker_fixture& f, std::chrono::milliseconds c, std::uint16_t prefetch)
        : fx(f)
        , cost(c)
        , ch(f.open_channel())
        , timer(f.clock.make_timer(f.io.get_executor())) {
        REQUIRE_FALSE(ch.basic_qos(prefetch));
        std::error_code ec;
        ch.basic_consume(
            "work", [this](const in_memory::basic_delivery& d) { take(d.delivery_tag); }, ec);
        REQUIRE_FALSE(ec);
    }

    void take(std::uint64_t tag) {
        backlog.push_back(tag);
        if (!busy)
            start();
    }
    void start() {
        busy = true;
        timer.expires_after(cost);
        timer.async_wait([this](boost::system::error_code ec) {
            if (ec)
                return;
            const auto tag = backlog.front();
            backlog.pop_front();
            busy = false;
            ++done;
            REQUIRE_FALSE(ch.basic_ack(tag)); // may hand this worker its next message
            if (!busy && !backlog.empty())
                start();
        });
    }

    broker_fixture& fx;
    std::chrono::milliseconds cost;
    in_memory::channel ch;
    letterbox::basic_virtual_timer<boost::asio::io_context::executor_type> timer;
    std::deque<std::uint64_t> backlog;
    bool busy = false;
    int done = 0;
};

struct fair_dispatch_result {
    std::chrono::milliseconds makespan;
    int fast_done;
    int slow_done;
};

fair_dispatch_result run_fair_dispatch(std::uint16_t prefetch) {
    broker_fixture fx;
    fx.declare_queue("work");
    auto fast = std::make_unique<worker>(fx, 5ms, prefetch);
    auto slow = std::make_unique<worker>(fx, 50ms, prefetch);
    publish_numbered(fx, "work", 1, 100);
    for (int steps = 0; fast->done + slow->done < 100; ++steps) {
        REQUIRE(steps < 10000);
        REQUIRE(fx.clock.advance_to_next());
        fx.run();
    }
    CHECK(fx.count("work") == tru(0, 0, 0));
    return {
        std::chrono::duration_cast<std::chrono::milliseconds>(fx.clock.now().time_since_epoch()),
        fast->done, slow->done};
}

} // namespace

TEST_CASE("RMQ-PF-07 prefetch 1 dispatches fairly so a slow consumer does not hoard work "
          "(virtual time)",
          "[transport][in_memory]") {
    const auto unlimited = run_fair_dispatch(0);
    const auto one = run_fair_dispatch(1);
    INFO("prefetch 0: " << unlimited.makespan.count() << " ms, prefetch 1: " << one.makespan.count()
                        << " ms");
    // Prefetch 0: round-robin hands each worker 50 at once; the slow one needs 50 x 50 ms.
    CHECK(unlimited.fast_done == 50);
    CHECK(unlimited.slow_done == 50);
    CHECK(unlimited.makespan == 2500ms);
    // Prefetch 1: work goes to whoever is free, close to the combined rate (100 / 0.22 per ms).
    CHECK(one.fast_done > 85);
    CHECK(one.makespan <= 500ms);
    CHECK(one.makespan * 4 < unlimited.makespan);
}

// ---- A4: publisher confirms, mandatory, returns -------------------------------------------------

TEST_CASE("RMQ-PC-01 and PC-02 confirm.select numbers publishes from 1 and acks each",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    confirm_log log;
    log.attach(fx.ch);
    CHECK(fx.ch.next_publish_seq() == 1);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.confirm_select()); // idempotent
    fx.publish("Q", "m1");
    REQUIRE(log.confirms.size() == 1);
    CHECK(log.confirms[0].seq == 1);
    CHECK(log.confirms[0].ack);
    CHECK(fx.ch.next_publish_seq() == 2);
}

TEST_CASE("RMQ-PC-03 four publishes are acked once each", "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    publish_numbered(fx, "Q", 1, 4);
    CHECK(log.acked() == std::vector<std::uint64_t>{1, 2, 3, 4});
    CHECK(log.nacked().empty());
    CHECK(fx.broker.counters().confirms_acked == 4);
}

TEST_CASE("RMQ-PC-04 a publish is confirmed although its queue is deleted right after",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.publish("Q", "m1");
    std::error_code ec;
    CHECK(fx.ch.queue_delete("Q", ec) == 1);
    CHECK(log.acked() == std::vector<std::uint64_t>{1});
    CHECK(fx.broker.counters().dropped_of(in_memory::drop_kind::queue_deleted) == 1);
}

TEST_CASE("RMQ-PC-05 an unroutable non-mandatory publish is acked and not returned",
          "[transport][in_memory]") {
    broker_fixture fx;
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.direct", "nobody", "x"), false));
    CHECK(log.events == std::vector<std::string>{"ack:1"});
    CHECK(log.returns.empty());
}

TEST_CASE("RMQ-PC-06 an unroutable mandatory publish is returned before it is acked",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.direct", "nobody", "lost"), true));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("", "Q", "routed"), true));
    CHECK(log.events == std::vector<std::string>{"return:1", "ack:1", "ack:2"});
    REQUIRE(log.returns.size() == 1);
    CHECK(log.returns[0].reply_code == 312);
    CHECK(log.returns[0].reply_text == "NO_ROUTE");
    CHECK(log.returns[0].msg->body == "lost");
    CHECK(log.returns[0].msg->routing_key == "nobody");
    CHECK(fx.broker.counters().returned == 1);
}

TEST_CASE("RMQ-PC-07 confirms work after a mandatory publish made before confirm.select",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("", "Q", "before"), true));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("", "nowhere", "returned"), true));
    CHECK(log.confirms.empty());
    REQUIRE(log.returns.size() == 1);
    CHECK(log.returns[0].publish_seq == 0);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("", "Q", "after"), true));
    CHECK(log.acked() == std::vector<std::uint64_t>{1});
}

TEST_CASE("RMQ-PC-10 a full reject-publish queue nacks the overflowing publish and never stores it",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue_arguments args;
    args.max_length = 2;
    args.overflow = topology::overflow_behaviour::reject_publish;
    fx.declare_queue("Q", args);
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    publish_numbered(fx, "Q", 1, 3);
    CHECK(log.acked() == std::vector<std::uint64_t>{1, 2});
    CHECK(log.nacked() == std::vector<std::uint64_t>{3});
    CHECK(fx.drain("Q") == std::vector<std::string>{"m1", "m2"});
    fx.publish("Q", "m4");
    CHECK(log.acked() == std::vector<std::uint64_t>{1, 2, 4});
    CHECK(fx.drain("Q") == std::vector<std::string>{"m4"});
    CHECK(fx.broker.counters().refused == 1);
}

TEST_CASE("RMQ-PC-11 a message larger than max_message_size closes the channel with 406",
          "[transport][in_memory]") {
    constexpr std::size_t mib = 1024 * 1024;
    SECTION("3 MiB limit") {
        broker_fixture fx(in_memory::broker_profile::rabbitmq_3_10(), 3 * mib);
        fx.declare_queue("Q");
        fx.publish("Q", std::string(2 * mib, 'a'));
        CHECK(fx.ch.basic_publish(make_message("", "Q", std::string(4 * mib, 'b'))) ==
              errc::precondition_failed);
        CHECK(fx.ch.close_reason().text == "PRECONDITION_FAILED - message size 4194304 is larger "
                                           "than configured max size 3145728");
        CHECK(fx.count("Q") == tru(1, 1, 0));
    }
    SECTION("raised to 8 MiB") {
        broker_fixture fx(in_memory::broker_profile::rabbitmq_3_10(), 8 * mib);
        fx.declare_queue("Q");
        fx.publish("Q", std::string(4 * mib, 'a'));
        fx.publish("Q", std::string(6 * mib, 'b'));
        CHECK(fx.ch.basic_publish(make_message("", "Q", std::string(10 * mib, 'c'))) ==
              errc::precondition_failed);
        CHECK(fx.count("Q") == tru(2, 2, 0));
    }
    SECTION("profile defaults: 128 MiB on 3.10, 16 MiB on 4.0") {
        CHECK(in_memory::broker_profile::rabbitmq_3_10().max_message_size == 128 * mib);
        broker_fixture f4(in_memory::broker_profile::rabbitmq_4_0());
        f4.declare_queue("Q");
        f4.publish("Q", std::string(16 * mib, 'a'));
        CHECK(f4.ch.basic_publish(make_message("", "Q", std::string(16 * mib + 1, 'b'))) ==
              errc::precondition_failed);
    }
}

TEST_CASE("RMQ-PC-12 a CC header that is not an array closes the channel with 406 (§0.3 14)",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    auto m = make_message("", "Q", "x");
    SECTION("a longstr") {
        m.headers.set(letterbox::headers::cc, "Q");
        CHECK(fx.ch.basic_publish(m) == errc::precondition_failed);
        CHECK(
            fx.ch.close_reason().text ==
            "PRECONDITION_FAILED - invalid message: {unacceptable_type_in_header,\"CC\",longstr}");
    }
    SECTION("a long") {
        m.headers.set(letterbox::headers::cc, std::int64_t{5});
        CHECK(fx.ch.basic_publish(m) == errc::precondition_failed);
        CHECK(fx.ch.close_reason().text ==
              "PRECONDITION_FAILED - invalid message: {unacceptable_type_in_header,\"CC\",long}");
    }
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.broker.counters().published == 0);
}

TEST_CASE("RMQ-PC-13 CC and BCC keys route extra copies and BCC is removed before delivery",
          "[transport][in_memory]") {
    broker_fixture fx;
    for (const char* q : {"Q", "Qcc", "Qbcc", "Qnone"})
        fx.declare_queue(q);
    auto m = make_message("", "Q", "x");
    m.headers.set(letterbox::headers::cc, letterbox::field_array{"Qcc"});
    m.headers.set(letterbox::headers::bcc, letterbox::field_array{"Qbcc", "Q"});
    REQUIRE_FALSE(fx.ch.basic_publish(m));
    for (const char* q : {"Q", "Qcc", "Qbcc"}) {
        INFO(q);
        auto ds = fx.drain_deliveries(q);
        REQUIRE(ds.size() == 1); // Q is named twice but gets one copy
        CHECK(ds[0].msg->routing_key == "Q");
        CHECK(strings_of(ds[0].msg->headers.find(letterbox::headers::cc)) ==
              std::vector<std::string>{"Qcc"});
        CHECK_FALSE(ds[0].msg->headers.contains(letterbox::headers::bcc));
    }
    CHECK(fx.drain("Qnone").empty());
    CHECK(fx.broker.counters().enqueued == 3);
}

TEST_CASE("RMQ-PC-14 every publish in confirm mode gets exactly one ack or nack",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue_arguments limited;
    limited.max_length = 1;
    limited.overflow = topology::overflow_behaviour::reject_publish;
    fx.declare_queue("full", limited);
    fx.declare_queue("Q");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    std::mt19937_64 rng(7);
    constexpr int n = 300;
    for (int i = 0; i < n; ++i) {
        switch (rng() % 4) {
        case 0:
            fx.publish("Q", "ok");
            break;
        case 1:
            fx.publish("full", "maybe");
            break;
        case 2:
            REQUIRE_FALSE(fx.ch.basic_publish(make_message("", "nowhere", "u"), true));
            break;
        default:
            REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.fanout", "", "f")));
            break;
        }
    }
    std::vector<int> seen(n + 1, 0);
    for (const auto& c : log.confirms) {
        REQUIRE(c.seq >= 1);
        REQUIRE(c.seq <= static_cast<std::uint64_t>(n));
        ++seen[c.seq];
    }
    CHECK(std::count(seen.begin() + 1, seen.end(), 1) == n);
    CHECK(log.nacked().size() == fx.broker.counters().refused);
    CHECK(fx.broker.counters().confirms_acked + fx.broker.counters().confirms_nacked ==
          static_cast<std::uint64_t>(n));
}

} // namespace unit_transport_in_memory_consuming
