// SPDX-License-Identifier: BSL-1.0
// TTL, length limits and quorum delivery limits in the RabbitMQ model
// (research/reliability-anchors.md A6, A7, A8; §0.3 1, 2, 4, 14). Queue expiry (`x-expires`,
// RMQ-TTL-08) is not modelled.

#include <letterbox/transport/in_memory/broker.hpp>

#include "scenario_fixture.hpp"

#include <letterbox/testing/seed.hpp>

#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace unit_transport_in_memory_ttl_and_limits {

using namespace broker_scenarios;

namespace {

using queue_type = topology::queue_type;
using reason = in_memory::dead_letter_reason;
using strings = std::vector<std::string>;

letterbox::message expiring(std::string queue, std::string body, std::string expiration) {
    auto m = make_message("", std::move(queue), std::move(body));
    m.properties.expiration = std::move(expiration);
    return m;
}

topology::queue_arguments with_ttl(queue_type type, std::chrono::milliseconds ttl) {
    auto a = of_type(type);
    a.message_ttl = ttl;
    return a;
}

std::optional<std::int64_t> delivery_count(const in_memory::basic_delivery& d) {
    return d.msg->headers.get<std::int64_t>(letterbox::headers::x_delivery_count);
}

} // namespace

// ---- A6: TTL ------------------------------------------------------------------------------------

TEST_CASE("RMQ-TTL-01 with a queue TTL delivered messages stay ackable and unconsumed ones expire",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", with_ttl(type, 2000ms));
    recorder r;
    std::error_code ec;
    in_memory::basic_consume_options opts;
    opts.consumer_tag = "c";
    fx.ch.basic_consume("Q", r.on_delivery(), ec, opts);
    fx.publish("Q", {"m1", "m2"});
    REQUIRE(r.deliveries.size() == 2);
    fx.advance(3000ms);
    CHECK(fx.count("Q") == tru(2, 0, 2));
    REQUIRE_FALSE(fx.ch.basic_ack(r.last_tag(), true));
    REQUIRE_FALSE(fx.ch.basic_cancel("c"));
    fx.publish("Q", {"m3", "m4"});
    fx.advance(1999ms);
    CHECK(fx.count("Q") == tru(2, 2, 0));
    fx.advance(1ms);
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.broker.counters().discarded_of(reason::expired) == 2);
}

TEST_CASE("RMQ-TTL-02 a per-message expiration is confirmed and expires on time",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(expiring("Q", "m", "1000")));
    CHECK(log.acked() == std::vector<std::uint64_t>{1});
    fx.advance(999ms);
    CHECK(fx.count("Q") == tru(1, 1, 0));
    fx.advance(1ms);
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("RMQ-TTL-03 an expired message behind a live one is never delivered",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", of_type(type));
    fx.publish("Q", "m1");
    REQUIRE_FALSE(fx.ch.basic_publish(expiring("Q", "m2", "100")));
    fx.advance(200ms);
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    CHECK(r.bodies() == strings{"m1"});
    CHECK(fx.count("Q") == tru(1, 0, 1));
    fx.publish("Q", "m3");
    CHECK(r.bodies() == strings{"m1", "m3"});
}

TEST_CASE("RMQ-TTL-04 expired messages leave only from the head and count in the length meanwhile",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::fanout);
    fx.declare_queue("DLQ");
    fx.bind("DLQ", "dlx", "");
    fx.declare_queue("Q", dlx_args("dlx", std::nullopt, type));
    fx.publish("Q", "live");
    for (const char* b : {"e1", "e2"})
        REQUIRE_FALSE(fx.ch.basic_publish(expiring("Q", b, "10")));
    fx.advance(50ms);
    CHECK(fx.count("Q") == tru(3, 3, 0));
    CHECK(fx.ready("DLQ") == 0);
    auto d = fx.get("Q");
    CHECK(body_of(*d) == "live");
    CHECK(fx.count("Q") == tru(1, 0, 1));
    CHECK(fx.drain("DLQ") == strings{"e1", "e2"});
    // A head that expires later is removed by the timer, without any client action.
    REQUIRE_FALSE(fx.ch.basic_publish(expiring("Q", "e3", "10")));
    fx.advance(10ms);
    CHECK(fx.drain("DLQ") == strings{"e3"});
}

TEST_CASE("RMQ-TTL-05 the lower of the queue TTL and the message expiration wins",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q100", with_ttl(type, 100ms));
    fx.declare_queue("Q50", with_ttl(type, 50ms));
    REQUIRE_FALSE(fx.ch.basic_publish(expiring("Q100", "m", "50")));
    REQUIRE_FALSE(fx.ch.basic_publish(expiring("Q50", "m", "100")));
    fx.advance(49ms);
    CHECK(fx.ready("Q100") == 1);
    CHECK(fx.ready("Q50") == 1);
    fx.advance(1ms);
    CHECK(fx.ready("Q100") == 0);
    CHECK(fx.ready("Q50") == 0);
}

TEST_CASE("RMQ-TTL-06 TTL 0 delivers only to a waiting consumer, otherwise expires at once without "
          "a return",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::fanout);
    fx.declare_queue("DLQ");
    fx.bind("DLQ", "dlx", "");
    auto args = dlx_args("dlx", std::nullopt, type);
    args.message_ttl = 0ms;
    fx.declare_queue("Q", args);
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("", "Q", "nobody-waiting"), true));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.drain("DLQ") == strings{"nobody-waiting"});
    CHECK(log.returns.empty());
    CHECK(log.acked() == std::vector<std::uint64_t>{1});

    auto consumer = fx.open_channel();
    REQUIRE_FALSE(consumer.basic_qos(1));
    recorder r;
    std::error_code ec;
    consumer.basic_consume("Q", r.on_delivery(), ec);
    fx.publish("Q", "waiting");
    CHECK(r.bodies() == strings{"waiting"});
    // The consumer's prefetch is used up: the next one cannot be delivered at once.
    fx.publish("Q", "busy");
    CHECK(r.bodies() == strings{"waiting"});
    CHECK(fx.drain("DLQ") == strings{"busy"});
    CHECK(fx.broker.counters().dead_lettered_of(reason::expired) == 2);
}

TEST_CASE("RMQ-TTL-07 a requeued message keeps its original expiry", "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", with_ttl(type, 100ms));
    fx.publish("Q", "m");
    fx.advance(60ms);
    auto consumer = fx.open_channel();
    std::error_code ec;
    auto d = consumer.basic_get("Q", ec);
    REQUIRE(d);
    fx.advance(20ms);
    SECTION("nack") {
        REQUIRE_FALSE(consumer.basic_nack(d->delivery_tag, false, true));
    }
    SECTION("reject") {
        REQUIRE_FALSE(consumer.basic_reject(d->delivery_tag, true));
    }
    SECTION("channel close") {
        consumer.close();
    }
    CHECK(fx.count("Q") == tru(1, 1, 0));
    fx.advance(19ms);
    CHECK(fx.count("Q") == tru(1, 1, 0));
    fx.advance(1ms);
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("RMQ-TTL-09 invalid expirations close the channel with the 3.10.8 error texts (§0.3 14)",
          "[transport][in_memory]") {
    const auto [expiration, why] = GENERATE(table<std::string, std::string>({
        {"abc", "no_integer"},
        {"-5", "{value_negative,-5}"},
        {"", "no_integer"},
        {"1.5", "{leftover_string,\".5\"}"},
    }));
    INFO("expiration '" << expiration << "'");
    broker_fixture fx;
    fx.declare_queue("Q");
    CHECK(fx.ch.basic_publish(expiring("Q", "m", expiration)) == errc::precondition_failed);
    CHECK(fx.ch.close_reason().text ==
          "PRECONDITION_FAILED - invalid expiration '" + expiration + "': " + why);
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

// ---- A7: length limits --------------------------------------------------------------------------

TEST_CASE("RMQ-ML-01 and ML-09 x-max-length 1 with the default drop-head keeps only the newest",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    auto args = of_type(type);
    args.max_length = 1;
    fx.declare_queue("Q", args);
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.publish("Q", {"1", "2"});
    CHECK(fx.drain("Q") == strings{"2"});
    fx.publish("Q", {"1", "2", "3"});
    CHECK(fx.drain("Q") == strings{"3"});
    CHECK(log.nacked().empty());
    CHECK(log.acked().size() == 5);
    CHECK(fx.broker.counters().discarded_of(reason::maxlen) == 3);
}

TEST_CASE("RMQ-ML-02 x-max-length-bytes counts bodies only", "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    auto args = of_type(type);
    args.max_length_bytes = 100;
    fx.declare_queue("Q", args);
    for (int i = 1; i <= 3; ++i) {
        auto m = make_message("", "Q", std::string(80, static_cast<char>('0' + i)));
        m.headers.set("padding", std::string(500, 'p')); // headers do not count
        REQUIRE_FALSE(fx.ch.basic_publish(m));
        CHECK(fx.broker.queue("Q")->ready_bytes == 80);
    }
    CHECK(fx.drain("Q") == strings{std::string(80, '3')});
}

TEST_CASE("RMQ-ML-03 reject-publish drops the overflowing publish with or without confirms",
          "[transport][in_memory]") {
    const bool bytes = GENERATE(false, true);
    INFO((bytes ? "x-max-length-bytes" : "x-max-length"));
    broker_fixture fx;
    topology::queue_arguments args;
    if (bytes)
        args.max_length_bytes = 10;
    else
        args.max_length = 1;
    args.overflow = topology::overflow_behaviour::reject_publish;
    fx.declare_queue("Q", args);
    fx.publish("Q", {"one-------", "two-------"});
    CHECK(fx.drain("Q") == strings{"one-------"});
    fx.publish("Q", {"one-------", "two-------", "three-----"});
    CHECK(fx.drain("Q") == strings{"one-------"});
    CHECK(fx.broker.counters().refused == 3);
}

TEST_CASE("RMQ-ML-04 reject-publish with confirms nacks overflowing publishes until there is room",
          "[transport][in_memory]") {
    const bool bytes = GENERATE(false, true);
    INFO((bytes ? "x-max-length-bytes" : "x-max-length"));
    broker_fixture fx;
    topology::queue_arguments args;
    if (bytes)
        args.max_length_bytes = 2;
    else
        args.max_length = 1;
    args.overflow = topology::overflow_behaviour::reject_publish;
    fx.declare_queue("Q", args);
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.publish("Q", {"m1", "m2", "m3"});
    CHECK(log.events == strings{"ack:1", "nack:2", "nack:3"});
    CHECK(fx.get_body("Q") == "m1");
    fx.publish("Q", "m2");
    CHECK(log.events.back() == "ack:4");
    CHECK(fx.get_body("Q") == "m2");
}

TEST_CASE("RMQ-ML-05 only ready messages count and a requeue is not subject to the limit",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue_arguments args;
    args.max_length = 1;
    args.overflow = topology::overflow_behaviour::reject_publish;
    fx.declare_queue("Q", args);
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.publish("Q", "P1");
    auto p1 = fx.get("Q");
    fx.publish("Q", "P2");
    CHECK(log.acked() == std::vector<std::uint64_t>{1, 2});
    REQUIRE_FALSE(fx.ch.basic_nack(p1->delivery_tag, false, true));
    CHECK(fx.count("Q") == tru(2, 2, 0));
    CHECK(fx.drain("Q") == strings{"P1", "P2"});
}

TEST_CASE("RMQ-ML-07 a publish refused by one of its queues is nacked but stays in the others",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue_arguments full;
    full.max_length = 1;
    full.overflow = topology::overflow_behaviour::reject_publish;
    fx.declare_queue("full", full);
    fx.declare_queue("open");
    fx.bind("full", "amq.fanout", "");
    fx.bind("open", "amq.fanout", "");
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.fanout", "", "first")));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.fanout", "", "second")));
    CHECK(log.events == strings{"ack:1", "nack:2"});
    CHECK(fx.drain("full") == strings{"first"});
    CHECK(fx.drain("open") == strings{"first", "second"});
}

TEST_CASE("RMQ-ML-08 a quorum reject-publish queue overshoots by one, then nacks, and recovers "
          "after draining",
          "[transport][in_memory]") {
    broker_fixture fx;
    auto args = of_type(queue_type::quorum);
    args.max_length = 1;
    args.overflow = topology::overflow_behaviour::reject_publish;
    fx.declare_queue("Q", args);
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.publish("Q", {"m1", "m2", "m3"});
    CHECK(log.events == strings{"ack:1", "ack:2", "nack:3"});
    CHECK(fx.drain("Q") == strings{"m1", "m2"});
    fx.publish("Q", "m4");
    CHECK(log.events.back() == "ack:4");
    CHECK(fx.drain("Q") == strings{"m4"});
}

TEST_CASE("drop-head also applies to requeues: a classic queue may drop the requeued message "
          "itself (§0.3 4)",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::fanout);
    fx.declare_queue("DLQ");
    fx.bind("DLQ", "dlx", "");
    auto args = dlx_args("dlx", std::nullopt, type);
    args.max_length = 1;
    fx.declare_queue("Q", args);
    fx.publish("Q", "m1");
    auto d = fx.get("Q");
    fx.publish("Q", "m2");
    CHECK(fx.count("Q") == tru(2, 1, 1));
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, true));
    CHECK(fx.count("Q") == tru(1, 1, 0));
    if (type == queue_type::classic) {
        // m1 goes back to its original place, the head, and is dropped at once.
        CHECK(fx.drain("DLQ") == strings{"m1"});
        CHECK(fx.drain("Q") == strings{"m2"});
    } else {
        // 3.10 quorum: the nacked m1 goes to the back, so m2 is the head that is dropped.
        CHECK(fx.drain("DLQ") == strings{"m2"});
        CHECK(fx.drain("Q") == strings{"m1"});
    }
    CHECK(fx.broker.counters().dead_lettered_of(reason::maxlen) == 1);
}

TEST_CASE("RMQ-ML-11 ready never exceeds a drop-head max-length under random operations",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    const auto seed = letterbox::testing::derive_seed(letterbox::testing::test_seed(),
                                                      "unit/transport/in_memory/ML-11");
    INFO("LETTERBOX_SEED=" << letterbox::testing::test_seed() << " (derived " << seed << ")");
    std::mt19937_64 rng(seed);
    broker_fixture fx;
    auto args = of_type(type);
    args.max_length = 3;
    fx.declare_queue("Q", args);
    auto ch = fx.open_channel();
    std::vector<std::uint64_t> held;
    for (int step = 0; step < 2000; ++step) {
        std::error_code ec;
        switch (rng() % 7) {
        case 0:
        case 1:
            fx.publish("Q", std::to_string(step));
            break;
        case 2:
            if (auto d = ch.basic_get("Q", ec))
                held.push_back(d->delivery_tag);
            break;
        case 3:
        case 4:
            if (!held.empty()) {
                const auto i = rng() % held.size();
                const bool requeue = rng() % 4 != 0;
                const auto ec2 =
                    rng() % 2 ? ch.basic_nack(held[i], false, requeue) : ch.basic_ack(held[i]);
                REQUIRE_FALSE(ec2);
                held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
            }
            break;
        case 5:
            if (rng() % 8 == 0) {
                ch.close();
                ch = fx.open_channel();
                held.clear();
            }
            break;
        default:
            if (rng() % 8 == 0) {
                REQUIRE_FALSE(ch.basic_recover());
                held.clear();
            }
            break;
        }
        INFO("step " << step);
        REQUIRE(fx.count("Q").ready <= 3);
        REQUIRE(fx.count("Q").unacked == held.size());
    }
    const auto& c = fx.broker.counters();
    CHECK(c.enqueued ==
          c.acked + c.discarded_total() + fx.broker.total_ready() + fx.broker.total_unacked());
}

// ---- A8: delivery limits and x-delivery-count ---------------------------------------------------

namespace {

/// One "crash": a consumer with prefetch 2 takes what it can, and its channel closes.
std::vector<in_memory::basic_delivery> crash(broker_fixture& fx, const std::string& queue) {
    auto ch = fx.open_channel();
    REQUIRE_FALSE(ch.basic_qos(2));
    recorder r;
    std::error_code ec;
    ch.basic_consume(queue, r.on_delivery(), ec);
    REQUIRE_FALSE(ec);
    ch.close();
    return r.deliveries;
}

topology::queue_arguments quorum_with_limit(std::int64_t limit) {
    auto a = of_type(queue_type::quorum);
    a.delivery_limit = limit;
    return a;
}

} // namespace

TEST_CASE("RMQ-DL-01 a quorum message past x-delivery-limit 1 is removed after the second crash",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q", quorum_with_limit(1));
    fx.publish("Q", "m");
    auto first = crash(fx, "Q");
    REQUIRE(first.size() == 1);
    CHECK_FALSE(first[0].redelivered);
    CHECK_FALSE(delivery_count(first[0]));
    CHECK(fx.count("Q") == tru(1, 1, 0));
    auto second = crash(fx, "Q");
    REQUIRE(second.size() == 1);
    CHECK(second[0].redelivered);
    CHECK(delivery_count(second[0]) == 1);
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.broker.counters().delivered == 2);
    CHECK(fx.broker.counters().discarded_of(reason::delivery_limit) == 1);
}

TEST_CASE("RMQ-DL-02 x-delivery-limit -1 never removes the message on 4.0+",
          "[transport][in_memory]") {
    broker_fixture fx(in_memory::broker_profile::rabbitmq_4_0());
    fx.declare_queue("Q", quorum_with_limit(-1));
    fx.publish("Q", "m");
    for (int i = 0; i < 2; ++i)
        REQUIRE(crash(fx, "Q").size() == 1);
    auto third = crash(fx, "Q");
    REQUIRE(third.size() == 1);
    CHECK(third[0].redelivered);
    CHECK(delivery_count(third[0]) == 2);
    CHECK(fx.count("Q") == tru(1, 1, 0));
}

TEST_CASE("x-delivery-limit -1 on 3.10 removes the message at its first return",
          "[transport][in_memory]") {
    // Seen on 3.10.8: the count is compared with -1 as it is (docs: 4.0 made -1 unlimited).
    broker_fixture fx;
    fx.declare_queue("Q", quorum_with_limit(-1));
    fx.publish("Q", "m");
    REQUIRE(crash(fx, "Q").size() == 1);
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.broker.counters().discarded_of(reason::delivery_limit) == 1);
}

TEST_CASE("RMQ-DL-03 each crash of a prefetch-2 consumer fails the messages it held",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q", quorum_with_limit(1));
    fx.publish("Q", {"m1", "m2", "m3", "m4", "m5"});
    std::vector<std::size_t> held, left;
    for (int i = 0; i < 6; ++i) {
        held.push_back(crash(fx, "Q").size());
        left.push_back(fx.count("Q").total);
    }
    CHECK(held == std::vector<std::size_t>{2, 2, 2, 2, 1, 1});
    CHECK(left == std::vector<std::size_t>{5, 3, 3, 1, 1, 0});
    CHECK(fx.broker.counters().discarded_of(reason::delivery_limit) == 5);
}

TEST_CASE("RMQ-DL-06 a message past the delivery limit is dead-lettered with reason "
          "delivery_limit",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("DLQ");
    auto args = quorum_with_limit(1);
    args.dead_letter_exchange = "";
    args.dead_letter_routing_key = "DLQ";
    fx.declare_queue("Q", args);
    fx.publish("Q", "m");
    crash(fx, "Q");
    CHECK(fx.ready("DLQ") == 0);
    crash(fx, "Q");
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    CHECK(
        x_death_entry(*dl[0].msg, 0).get<std::string>(letterbox::headers::x_death_field::reason) ==
        "delivery_limit");
    CHECK(x_death_entry(*dl[0].msg, 0).get<std::string>(letterbox::headers::x_death_field::queue) ==
          "Q");
    CHECK(fx.broker.counters().dead_lettered_of(reason::delivery_limit) == 1);
}

TEST_CASE("RMQ-DL-07 basic.get with reject requeue shows x-delivery-count 0, 1, 2 (§0.3 2)",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q", of_type(queue_type::quorum));
    fx.publish("Q", "m");
    std::vector<std::optional<std::int64_t>> counts;
    for (int i = 0; i < 3; ++i) {
        auto d = fx.get("Q");
        REQUIRE(d);
        counts.push_back(delivery_count(*d));
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
    }
    CHECK(counts == std::vector<std::optional<std::int64_t>>{0, 1, 2});
    CHECK(fx.count("Q") == tru(1, 1, 0));
}

TEST_CASE("RMQ-DL-08 a consumer sees no x-delivery-count first, then 1 and 2 after rejects",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q", of_type(queue_type::quorum));
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    fx.publish("Q", "m");
    for (int i = 0; i < 2; ++i)
        REQUIRE_FALSE(fx.ch.basic_reject(r.last_tag(), true));
    REQUIRE(r.deliveries.size() == 3);
    CHECK_FALSE(delivery_count(r.deliveries[0]));
    CHECK(delivery_count(r.deliveries[1]) == 1);
    CHECK(delivery_count(r.deliveries[2]) == 2);
    REQUIRE_FALSE(fx.ch.basic_ack(r.last_tag()));
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("x-delivery-count on 3.10 is a long, incremented by nack too, and absent on classic "
          "queues (§0.3 2)",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("QQ", of_type(queue_type::quorum));
    fx.declare_queue("CQ");
    fx.publish("QQ", "m");
    fx.publish("CQ", "m");
    auto d = fx.get("QQ");
    const auto* v = d->msg->headers.find(letterbox::headers::x_delivery_count);
    REQUIRE(v);
    CHECK(v->is<std::int64_t>());
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, true));
    d = fx.get("QQ");
    CHECK(delivery_count(*d) == 1);
    auto c = fx.get("CQ");
    REQUIRE_FALSE(fx.ch.basic_nack(c->delivery_tag, false, true));
    c = fx.get("CQ");
    CHECK(c->redelivered);
    CHECK_FALSE(c->msg->headers.contains(letterbox::headers::x_delivery_count));
}

TEST_CASE("RMQ-DL-09 delivery limit 0: a closed channel's two unacked messages are dead-lettered "
          "in order",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("DLQ");
    auto args = quorum_with_limit(0);
    args.dead_letter_exchange = "";
    args.dead_letter_routing_key = "DLQ";
    fx.declare_queue("Q", args);
    fx.publish("Q", {"m1", "m2"});
    auto conn2 = fx.broker.connect("consumer");
    auto ch2 = conn2.open_channel();
    std::error_code ec;
    REQUIRE(ch2.basic_get("Q", ec));
    REQUIRE(ch2.basic_get("Q", ec));
    conn2.close();
    CHECK(fx.drain("DLQ") == strings{"m1", "m2"});
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("quorum queue requeue position on 3.10: nack and reject go to the back, a closed "
          "channel's messages to the front (§0.3 1)",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("QQ", of_type(queue_type::quorum));
    fx.declare_queue("CQ");
    for (const char* q : {"QQ", "CQ"})
        publish_numbered(fx, q, 1, 4);
    SECTION("nack m2 then reject m1 (basic.get)") {
        for (const char* q : {"QQ", "CQ"}) {
            auto d1 = fx.get(q);
            auto d2 = fx.get(q);
            REQUIRE_FALSE(fx.ch.basic_nack(d2->delivery_tag, false, true));
            REQUIRE_FALSE(fx.ch.basic_reject(d1->delivery_tag, true));
        }
        CHECK(fx.drain("QQ") == std::vector<std::string>{"m3", "m4", "m2", "m1"});
        CHECK(fx.drain("CQ") == std::vector<std::string>{"m1", "m2", "m3", "m4"});
    }
    SECTION("nack in reverse order with a consumer") {
        REQUIRE_FALSE(fx.ch.basic_qos(2));
        recorder r;
        std::error_code ec;
        in_memory::basic_consume_options opts;
        opts.consumer_tag = "c";
        fx.ch.basic_consume("QQ", r.on_delivery(), ec, opts);
        REQUIRE(r.bodies() == std::vector<std::string>{"m1", "m2"});
        REQUIRE_FALSE(fx.ch.basic_cancel("c"));
        REQUIRE_FALSE(fx.ch.basic_nack(2, false, true));
        REQUIRE_FALSE(fx.ch.basic_nack(1, false, true));
        CHECK(fx.drain("QQ") == std::vector<std::string>{"m3", "m4", "m2", "m1"});
    }
    SECTION("channel close") {
        auto consumer = fx.open_channel();
        for (const char* q : {"QQ", "CQ"}) {
            std::error_code ec;
            consumer.basic_get(q, ec);
            consumer.basic_get(q, ec);
        }
        consumer.close();
        CHECK(fx.drain("QQ") == std::vector<std::string>{"m1", "m2", "m3", "m4"});
        CHECK(fx.drain("CQ") == std::vector<std::string>{"m1", "m2", "m3", "m4"});
    }
    SECTION("4.0 profile: returns are served first in return order") {
        broker_fixture f4(in_memory::broker_profile::rabbitmq_4_0());
        f4.declare_queue("QQ", of_type(queue_type::quorum));
        publish_numbered(f4, "QQ", 1, 4);
        auto d1 = f4.get("QQ");
        auto d2 = f4.get("QQ");
        REQUIRE_FALSE(f4.ch.basic_nack(d2->delivery_tag, false, true));
        REQUIRE_FALSE(f4.ch.basic_reject(d1->delivery_tag, true));
        CHECK(f4.drain("QQ") == std::vector<std::string>{"m2", "m1", "m3", "m4"});
    }
}

TEST_CASE("every return counts toward the delivery limit on 3.10 but nack does not on 4.3",
          "[transport][in_memory]") {
    SECTION("3.10: nack, reject and channel close all count") {
        broker_fixture fx;
        fx.declare_queue("Q", quorum_with_limit(2));
        fx.publish("Q", "m");
        auto d = fx.get("Q");
        REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, true));
        d = fx.get("Q");
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
        CHECK(fx.count("Q") == tru(1, 1, 0));
        fx.get("Q");
        fx.ch.close();
        CHECK(fx.count("Q") == tru(0, 0, 0));
        CHECK(fx.broker.counters().discarded_of(reason::delivery_limit) == 1);
    }
    SECTION("4.3: nack (single or multiple) does not count, reject does") {
        broker_fixture fx(in_memory::broker_profile::rabbitmq_4_3());
        fx.declare_queue("Q", quorum_with_limit(1));
        fx.publish("Q", "m");
        std::vector<std::optional<std::int64_t>> acquired;
        for (int i = 0; i < 5; ++i) {
            auto d = fx.get("Q");
            REQUIRE(d);
            CHECK(delivery_count(*d) == 0);
            acquired.push_back(
                d->msg->headers.get<std::int64_t>(letterbox::headers::x_acquired_count));
            REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, i % 2 == 0, true));
        }
        CHECK(fx.count("Q") == tru(1, 1, 0));
        // x-acquired-count grows with every acquisition.
        for (std::size_t i = 0; i < acquired.size(); ++i) {
            REQUIRE(acquired[i]);
            CHECK(*acquired[i] == *acquired[0] + static_cast<std::int64_t>(i));
        }
        auto d = fx.get("Q");
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
        d = fx.get("Q");
        CHECK(delivery_count(*d) == 1);
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
        CHECK(fx.count("Q") == tru(0, 0, 0));
    }
}

TEST_CASE("quorum queues have no default delivery limit on 3.10 and a limit of 20 on 4.0",
          "[transport][in_memory]") {
    SECTION("3.10") {
        broker_fixture fx;
        fx.declare_queue("Q", of_type(queue_type::quorum));
        fx.publish("Q", "m");
        for (int i = 0; i < 25; ++i)
            REQUIRE_FALSE(fx.ch.basic_reject(fx.get("Q")->delivery_tag, true));
        CHECK(fx.count("Q") == tru(1, 1, 0));
    }
    SECTION("4.0") {
        broker_fixture fx(in_memory::broker_profile::rabbitmq_4_0());
        fx.declare_queue("Q", of_type(queue_type::quorum));
        fx.publish("Q", "m");
        for (int i = 0; i < 20; ++i)
            REQUIRE_FALSE(fx.ch.basic_reject(fx.get("Q")->delivery_tag, true));
        CHECK(fx.count("Q") == tru(1, 1, 0));
        REQUIRE_FALSE(fx.ch.basic_reject(fx.get("Q")->delivery_tag, true));
        CHECK(fx.count("Q") == tru(0, 0, 0));
    }
}

} // namespace unit_transport_in_memory_ttl_and_limits
