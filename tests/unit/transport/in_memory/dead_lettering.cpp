// SPDX-License-Identifier: BSL-1.0
// Dead-lettering in the RabbitMQ model: every case of dead_lettering_SUITE that applies to 3.10
// and to what the model supports (research/reliability-anchors.md A5, DLX-01..46; §0.3 3-9).
// Policies (DLX-21..23), the internal extra_bcc option (DLX-36), streams (DLX-37) and
// at-least-once dead-lettering are not modelled.

#include <letterbox/transport/in_memory/broker.hpp>

#include "scenario_fixture.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace unit_transport_in_memory_dead_lettering {

using namespace broker_scenarios;

namespace {

using queue_type = topology::queue_type;
using reason = in_memory::dead_letter_reason;
namespace xd = letterbox::headers::x_death_field;

using strings = std::vector<std::string>;

/// The suite's `declare_dead_letter_queues`: a direct DLX exchange `dlx`, queue Q dead-lettering
/// to it with routing key DLQ, and DLQ bound to `dlx` with key DLQ.
void declare_dead_letter_queues(broker_fixture& fx, queue_type type,
                                topology::queue_arguments extra = {}) {
    fx.declare_exchange("dlx", topology::exchange_type::direct);
    extra.dead_letter_exchange = "dlx";
    extra.dead_letter_routing_key = "DLQ";
    extra.type = type;
    fx.declare_queue("Q", extra);
    fx.declare_queue("DLQ");
    fx.bind("DLQ", "dlx", "DLQ");
}

std::uint64_t dead_lettered(const broker_fixture& fx, reason r) {
    return fx.broker.counters().dead_lettered_of(r);
}

letterbox::message with_cc(std::string queue, std::string body, strings cc, strings bcc = {}) {
    auto m = make_message("", std::move(queue), std::move(body));
    letterbox::field_array a, b;
    for (auto& k : cc)
        a.emplace_back(k);
    for (auto& k : bcc)
        b.emplace_back(k);
    if (!a.empty())
        m.headers.set(letterbox::headers::cc, std::move(a));
    if (!b.empty())
        m.headers.set(letterbox::headers::bcc, std::move(b));
    return m;
}

std::string text(const letterbox::message& m, std::string_view header) {
    return m.headers.get<std::string>(header).value_or("<absent>");
}

} // namespace

TEST_CASE("DLX-01 single nacks without requeue dead-letter each message in nack order",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    fx.publish("Q", {"m1", "m2", "m3"});
    CHECK(fx.count("Q") == tru(3, 3, 0));
    auto d1 = fx.get("Q"), d2 = fx.get("Q"), d3 = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_nack(d3->delivery_tag, false, false));
    CHECK(fx.count("DLQ") == tru(1, 1, 0));
    CHECK(fx.count("Q") == tru(2, 0, 2));
    CHECK(fx.drain("DLQ") == strings{"m3"});
    REQUIRE_FALSE(fx.ch.basic_nack(d1->delivery_tag, false, false));
    REQUIRE_FALSE(fx.ch.basic_nack(d2->delivery_tag, false, false));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.drain("DLQ") == strings{"m1", "m2"});
    CHECK(dead_lettered(fx, reason::rejected) == 3);
}

TEST_CASE("DLX-02 a multiple nack without requeue dead-letters all in order",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    fx.publish("Q", {"m1", "m2", "m3"});
    for (int i = 0; i < 3; ++i)
        REQUIRE(fx.get("Q"));
    REQUIRE_FALSE(fx.ch.basic_nack(3, true, false));
    CHECK(fx.count("DLQ") == tru(3, 3, 0));
    CHECK(fx.drain("DLQ") == strings{"m1", "m2", "m3"});
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(dead_lettered(fx, reason::rejected) == 3);
}

TEST_CASE("DLX-03 and DLX-04 nacks with requeue do not dead-letter", "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    fx.publish("Q", {"m1", "m2", "m3"});
    for (int i = 0; i < 3; ++i)
        REQUIRE(fx.get("Q"));
    CHECK_FALSE(fx.get("Q"));
    SECTION("single (DLX-03)") {
        REQUIRE_FALSE(fx.ch.basic_nack(3, false, true));
        CHECK(fx.count("Q") == tru(3, 1, 2));
        CHECK(fx.get_body("Q") == "m3");
    }
    SECTION("multiple (DLX-04)") {
        REQUIRE_FALSE(fx.ch.basic_nack(3, true, true));
        CHECK(fx.count("Q") == tru(3, 3, 0));
        CHECK(fx.drain("Q") == strings{"m1", "m2", "m3"});
    }
    CHECK(fx.drain("DLQ").empty());
    CHECK(dead_lettered(fx, reason::rejected) == 0);
}

TEST_CASE("DLX-05 reject without requeue dead-letters one message and leaves the others",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    fx.publish("Q", {"m1", "m2", "m3"});
    auto d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    CHECK(fx.count("DLQ") == tru(1, 1, 0));
    CHECK(fx.drain("DLQ") == strings{"m1"});
    CHECK(fx.drain("Q") == strings{"m2", "m3"});
    CHECK(dead_lettered(fx, reason::rejected) == 1);
}

namespace {

// DLX-06 ring: Q1 `b` (reject) -> Q2 `a2` (TTL 5 ms) -> Q3 `a3` (TTL 5 ms) -> Q1, all through the
// default exchange with explicit dead-letter routing keys.
void declare_ring(broker_fixture& fx) {
    fx.declare_queue("b", dlx_args("", "a2"));
    auto a2 = dlx_args("", "a3");
    a2.message_ttl = 5ms;
    fx.declare_queue("a2", a2);
    auto a3 = dlx_args("", "b");
    a3.message_ttl = 5ms;
    fx.declare_queue("a3", a3);
}

// Rejects the message in `b` and lets it expire through a2 and a3; returns what `b` held.
in_memory::basic_delivery lap(broker_fixture& fx) {
    auto d = fx.get("b");
    REQUIRE(d);
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    CHECK(fx.ready("a2") == 1);
    fx.advance(5ms);
    fx.advance(5ms);
    return *d;
}

} // namespace

TEST_CASE("DLX-06 a reject-expire-expire ring comes back after lap 1 and is dropped as a false "
          "cycle on lap 2 on 3.10 (§0.3 7)",
          "[transport][in_memory]") {
    broker_fixture fx;
    declare_ring(fx);
    fx.publish("b", "m");
    const auto first = lap(fx);
    CHECK(x_death_of(*first.msg).empty());
    REQUIRE(fx.count("b") == tru(1, 1, 0));
    const auto second = lap(fx);
    // 3.10 reverses the older entries on each event (§0.3 6): after lap 1 the history reads
    // a3, b, a2; on lap 2 the entry of a3 then precedes every rejection, so the expiry in a2
    // looks like a fully automatic cycle and the message is dropped there.
    CHECK(x_death_queues(*second.msg) == strings{"a3", "b", "a2"});
    CHECK(fx.broker.total_ready() == 0);
    CHECK(fx.broker.total_unacked() == 0);
    CHECK(fx.broker.counters().dead_letters_dropped_of(in_memory::dead_letter_drop::cycle) == 1);
    CHECK(dead_lettered(fx, reason::rejected) == 2);
    CHECK(dead_lettered(fx, reason::expired) == 3);
}

TEST_CASE("DLX-06 the reject-expire-expire ring comes back on every lap on the 3.13 profile",
          "[transport][in_memory]") {
    broker_fixture fx(in_memory::broker_profile::rabbitmq_3_13());
    declare_ring(fx);
    fx.publish("b", "m");
    for (int i = 1; i <= 3; ++i) {
        INFO("lap " << i);
        (void)lap(fx);
        REQUIRE(fx.ready("b") == 1);
    }
    auto back = fx.drain_deliveries("b");
    REQUIRE(back.size() == 1);
    // 3.13: most recent first, no reversal.
    CHECK(x_death_queues(*back[0].msg) == strings{"a3", "a2", "b"});
    CHECK(x_death_entry(*back[0].msg, 2).get<std::int64_t>(xd::count) == 3);
    CHECK(fx.broker.counters().dead_letters_dropped_of(in_memory::dead_letter_drop::cycle) == 0);
}

TEST_CASE("DLX-07 a hundred rejected messages reach the DLQ in publish order",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    strings payloads;
    for (int i = 1; i <= 100; ++i) {
        payloads.push_back(std::to_string(i));
        fx.publish("Q", payloads.back());
    }
    std::error_code ec;
    auto consumer = fx.open_channel();
    consumer.basic_consume(
        "Q",
        [&](const in_memory::basic_delivery& d) {
            REQUIRE_FALSE(consumer.basic_reject(d.delivery_tag, false));
        },
        ec);
    REQUIRE_FALSE(ec);
    CHECK(fx.count("DLQ") == tru(100, 100, 0));
    CHECK(fx.drain("DLQ") == payloads);
    CHECK(dead_lettered(fx, reason::rejected) == 100);
}

TEST_CASE("DLX-08 reject with requeue keeps the message: classic original position, quorum head "
          "with a delivery limit and back of the queue without one on 3.10, head on 4.0",
          "[transport][in_memory]") {
    auto run = [](in_memory::broker_profile profile, queue_type type,
                  std::optional<std::int64_t> limit) {
        broker_fixture fx(profile);
        topology::queue_arguments extra;
        extra.delivery_limit = limit;
        declare_dead_letter_queues(fx, type, extra);
        fx.publish("Q", {"m1", "m2", "m3"});
        auto d = fx.get("Q");
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
        CHECK(fx.count("Q") == tru(3, 3, 0));
        CHECK(fx.drain("DLQ").empty());
        CHECK(dead_lettered(fx, reason::rejected) == 0);
        return fx.drain("Q");
    };
    CHECK(run(in_memory::broker_profile::rabbitmq_3_10(), queue_type::classic, std::nullopt) ==
          strings{"m1", "m2", "m3"});
    // §0.3 1 (corrected): a delivery limit puts the requeued message at the front.
    CHECK(run(in_memory::broker_profile::rabbitmq_3_10(), queue_type::quorum, 50) ==
          strings{"m1", "m2", "m3"});
    CHECK(run(in_memory::broker_profile::rabbitmq_3_10(), queue_type::quorum, std::nullopt) ==
          strings{"m2", "m3", "m1"});
    CHECK(run(in_memory::broker_profile::rabbitmq_4_0(), queue_type::quorum, 50) ==
          strings{"m1", "m2", "m3"});
}

TEST_CASE("DLX-09 drop-head overflow dead-letters the oldest messages in order",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    topology::queue_arguments extra;
    extra.max_length = 1;
    declare_dead_letter_queues(fx, type, extra);
    fx.publish("Q", {"m1", "m2", "m3"});
    CHECK(fx.count("Q") == tru(1, 1, 0));
    CHECK(fx.drain("Q") == strings{"m3"});
    CHECK(fx.drain("DLQ") == strings{"m1", "m2"});
    CHECK(dead_lettered(fx, reason::maxlen) == 2);
}

TEST_CASE("DLX-10 reject with requeue then without dead-letters the message once",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    fx.publish("Q", "m");
    auto d = fx.get("Q");
    CHECK(fx.count("Q") == tru(1, 0, 1));
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
    CHECK(fx.count("Q") == tru(1, 1, 0));
    d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    CHECK(fx.count("DLQ") == tru(1, 1, 0));
    CHECK(fx.drain("DLQ") == strings{"m"});
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(dead_lettered(fx, reason::rejected) == 1);
}

TEST_CASE("DLX-11 a multiple nack dead-letters the unacked set in delivery-tag order (basic.get)",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    topology::queue_arguments extra;
    if (type == queue_type::quorum)
        extra.delivery_limit = 50;
    declare_dead_letter_queues(fx, type, extra);
    fx.publish("Q", {"m1", "m2", "m3"});
    for (int i = 0; i < 3; ++i)
        REQUIRE(fx.get("Q"));
    REQUIRE_FALSE(fx.ch.basic_nack(2, true, true));
    CHECK(fx.count("Q") == tru(3, 2, 1));
    auto d4 = fx.get("Q");
    auto d5 = fx.get("Q");
    CHECK(body_of(*d4) == "m1");
    CHECK(d4->delivery_tag == 4);
    CHECK(body_of(*d5) == "m2");
    CHECK(d5->delivery_tag == 5);
    REQUIRE_FALSE(fx.ch.basic_nack(5, true, false));
    CHECK(fx.drain("DLQ") == strings{"m3", "m1", "m2"});
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(dead_lettered(fx, reason::rejected) == 3);
}

TEST_CASE("DLX-12 a multiple nack dead-letters the unacked set in delivery-tag order (consumers)",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    topology::queue_arguments extra;
    if (type == queue_type::quorum)
        extra.delivery_limit = 50;
    declare_dead_letter_queues(fx, type, extra);
    recorder q, dlq;
    std::error_code ec;
    fx.ch.basic_consume("Q", q.on_delivery(), ec);
    auto dlq_ch = fx.open_channel();
    dlq_ch.basic_consume("DLQ", dlq.on_delivery(), ec);
    fx.publish("Q", {"m1", "m2", "m3"});
    REQUIRE(q.bodies() == strings{"m1", "m2", "m3"});
    REQUIRE_FALSE(fx.ch.basic_nack(2, true, true));
    CHECK(q.bodies() == strings{"m1", "m2", "m3", "m1", "m2"});
    REQUIRE_FALSE(fx.ch.basic_nack(5, true, false));
    CHECK(dlq.bodies() == strings{"m3", "m1", "m2"});
    REQUIRE_FALSE(dlq_ch.basic_ack(dlq.last_tag(), true));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.count("DLQ") == tru(0, 0, 0));
    CHECK(dead_lettered(fx, reason::rejected) == 3);
}

TEST_CASE("DLX-13 reject-publish-dlx on a classic queue keeps the first and dead-letters the "
          "refused publishes",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue_arguments extra;
    extra.max_length = 1;
    extra.overflow = topology::overflow_behaviour::reject_publish_dlx;
    declare_dead_letter_queues(fx, queue_type::classic, extra);
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.publish("Q", {"m1", "m2", "m3"});
    CHECK(fx.drain("Q") == strings{"m1"});
    CHECK(fx.drain("DLQ") == strings{"m2", "m3"});
    CHECK(dead_lettered(fx, reason::maxlen) == 2);
    CHECK(log.acked() == std::vector<std::uint64_t>{1});
    CHECK(log.nacked() == std::vector<std::uint64_t>{2, 3});
}

TEST_CASE("DLX-13 reject-publish-dlx on a quorum queue is accepted and behaves like drop-head "
          "on every version (§0.3 3)",
          "[transport][in_memory]") {
    // RabbitMQ logs "Invalid overflow strategy" and runs the queue with its default, drop-head
    // (rabbit_quorum_queue:overflow/3 in v3.10.0, v3.13.0 and v4.0.0).
    const auto profile = GENERATE(in_memory::broker_profile::rabbitmq_3_10(),
                                  in_memory::broker_profile::rabbitmq_3_13(),
                                  in_memory::broker_profile::rabbitmq_4_0());
    INFO(profile.name);
    broker_fixture fx(profile);
    topology::queue_arguments extra;
    extra.max_length = 1;
    extra.overflow = topology::overflow_behaviour::reject_publish_dlx;
    declare_dead_letter_queues(fx, queue_type::quorum, extra);
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.publish("Q", {"m1", "m2", "m3"});
    CHECK(log.acked() == std::vector<std::uint64_t>{1, 2, 3});
    CHECK(fx.drain("Q") == strings{"m3"});
    CHECK(fx.drain("DLQ") == strings{"m1", "m2"});
    CHECK(dead_lettered(fx, reason::maxlen) == 2);
}

TEST_CASE("DLX-14 a missing dead-letter exchange drops the message and does not count it as "
          "dead-lettered",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    auto args = dlx_args("dlx-exchange-2", "DLQ", type);
    args.max_length = 1;
    fx.declare_queue("Q", args);
    fx.declare_queue("DLQ");
    fx.publish("Q", "m1");
    auto d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.count("DLQ") == tru(0, 0, 0));
    // RabbitMQ counts it under the `disabled` strategy, like a queue without a DLX.
    CHECK(dead_lettered(fx, reason::rejected) == 0);
    CHECK(fx.broker.counters().discarded_of(reason::rejected) == 1);
    CHECK(fx.broker.counters().dead_letters_dropped_of(
              in_memory::dead_letter_drop::exchange_missing) == 1);

    fx.declare_exchange("dlx-exchange-2", topology::exchange_type::direct);
    fx.bind("DLQ", "dlx-exchange-2", "DLQ");
    fx.publish("Q", "m2");
    d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    CHECK(fx.drain("DLQ") == strings{"m2"});
    CHECK(dead_lettered(fx, reason::rejected) == 1);
}

TEST_CASE("DLX-15 without a dead-letter routing key the original key is used and an unroutable "
          "dead letter is dropped",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::direct);
    fx.declare_queue("Q", dlx_args("dlx", std::nullopt, type));
    fx.declare_queue("DLQ");
    fx.publish("Q", "m1");
    auto d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(fx.drain("DLQ").empty());
    CHECK(fx.broker.counters().dead_letters_dropped_of(in_memory::dead_letter_drop::unroutable) ==
          1);
    fx.bind("DLQ", "dlx", "Q");
    fx.publish("Q", "m2");
    d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    CHECK(fx.drain("DLQ") == strings{"m2"});
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(dead_lettered(fx, reason::rejected) == 2);
}

TEST_CASE("DLX-16 and DLX-17 CC and BCC keys route the dead letter when the queue has no "
          "dead-letter routing key",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    const bool bcc = GENERATE(false, true);
    INFO(type_name(type) << (bcc ? " BCC" : " CC"));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::direct);
    fx.declare_queue("Q", dlx_args("dlx", std::nullopt, type));
    fx.declare_queue("DLQ");
    fx.bind("DLQ", "dlx", "DLQ");
    fx.publish("Q", "m1");
    REQUIRE_FALSE(
        fx.ch.basic_publish(bcc ? with_cc("Q", "m2", {}, {"DLQ"}) : with_cc("Q", "m2", {"DLQ"})));
    CHECK(fx.count("Q") == tru(2, 2, 0));
    CHECK(fx.get_body("Q") == "m1");
    auto d2 = fx.get("Q");
    CHECK(body_of(*d2) == "m2");
    // m2 was also delivered straight to DLQ through the default exchange.
    CHECK(fx.get_body("DLQ") == "m2");
    REQUIRE_FALSE(fx.ch.basic_nack(d2->delivery_tag, true, false));
    CHECK(fx.count("DLQ") == tru(2, 1, 1));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    CHECK(body_of(dl[0]) == "m2");
    CHECK(x_death_of(*dl[0].msg).size() == 1);
    CHECK(fx.broker.counters().dead_letters_dropped_of(in_memory::dead_letter_drop::unroutable) ==
          1);
}

TEST_CASE("DLX-18 an overflow that would cycle back into its own queue is dropped",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    auto args = dlx_args("", std::nullopt, type);
    args.max_length = 1;
    fx.declare_queue("Q", args);
    fx.publish("Q", {"m1", "m2"});
    CHECK(fx.count("Q") == tru(1, 1, 0));
    auto d = fx.get("Q");
    CHECK(body_of(*d) == "m2");
    REQUIRE_FALSE(fx.ch.basic_ack(d->delivery_tag));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(dead_lettered(fx, reason::maxlen) == 1);
    CHECK(fx.broker.counters().dead_letters_dropped_of(in_memory::dead_letter_drop::cycle) == 1);
}

TEST_CASE("DLX-19 expiries that would cycle back into their own queue are dropped",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    auto args = dlx_args("", std::nullopt, type);
    args.message_ttl = 1ms;
    fx.declare_queue("Q", args);
    fx.publish("Q", {"m1", "m2"});
    fx.advance(1ms);
    CHECK(fx.count("Q") == tru(0, 0, 0));
    CHECK(dead_lettered(fx, reason::expired) == 2);
    CHECK(fx.broker.counters().dead_letters_dropped_of(in_memory::dead_letter_drop::cycle) == 2);
}

TEST_CASE("DLX-20 a cycle with a rejection in it is allowed", "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", dlx_args("", std::nullopt, type));
    fx.publish("Q", "m");
    for (int i = 0; i < 2; ++i) {
        auto d = fx.get("Q");
        REQUIRE(d);
        REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
        CHECK(fx.count("Q") == tru(1, 1, 0));
    }
    CHECK(dead_lettered(fx, reason::rejected) == 2);
}

TEST_CASE("DLX-24 a rejected message carries one x-death entry and the x-first-death headers, no "
          "x-last-death on 3.10",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    fx.clock.advance(90s);
    fx.publish("Q", "m");
    auto d = fx.get("Q");
    CHECK(x_death_of(*d->msg).empty());
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    const auto& m = *dl[0].msg;
    REQUIRE(x_death_of(m).size() == 1);
    const auto e = x_death_entry(m, 0);
    CHECK(e.get<std::string>(xd::queue) == "Q");
    CHECK(e.get<std::string>(xd::reason) == "rejected");
    CHECK(e.get<std::string>(xd::exchange) == "");
    CHECK(e.get<std::int64_t>(xd::count) == 1);
    CHECK(strings_of(e.find(xd::routing_keys)) == strings{"Q"});
    CHECK(e.get<letterbox::timestamp>(xd::time) ==
          std::chrono::time_point_cast<std::chrono::seconds>(fx.clock.wall_now()));
    CHECK_FALSE(e.contains(xd::original_expiration));
    CHECK(text(m, letterbox::headers::x_first_death_reason) == "rejected");
    CHECK(text(m, letterbox::headers::x_first_death_queue) == "Q");
    CHECK(text(m, letterbox::headers::x_first_death_exchange) == "");
    CHECK_FALSE(m.headers.contains(letterbox::headers::x_last_death_reason));
    CHECK_FALSE(m.headers.contains(letterbox::headers::x_last_death_queue));
    CHECK_FALSE(m.headers.contains(letterbox::headers::x_last_death_exchange));
    // The dead letter was republished to the DLX with the queue's dead-letter key.
    CHECK(m.exchange == "dlx");
    CHECK(m.routing_key == "DLQ");
}

TEST_CASE("x-last-death headers are written on the 3.13 profile", "[transport][in_memory]") {
    broker_fixture fx(in_memory::broker_profile::rabbitmq_3_13());
    declare_dead_letter_queues(fx, queue_type::classic);
    fx.publish("Q", "m");
    auto d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    CHECK(text(*dl[0].msg, letterbox::headers::x_last_death_reason) == "rejected");
    CHECK(text(*dl[0].msg, letterbox::headers::x_last_death_queue) == "Q");
    CHECK(text(*dl[0].msg, letterbox::headers::x_last_death_exchange) == "");
}

TEST_CASE("DLX-25 a queue TTL expiry has reason expired and no original-expiration",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    topology::queue_arguments extra;
    extra.message_ttl = 1ms;
    declare_dead_letter_queues(fx, type, extra);
    fx.publish("Q", "m");
    CHECK(fx.drain("DLQ").empty());
    fx.advance(1ms);
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    const auto e = x_death_entry(*dl[0].msg, 0);
    CHECK(e.get<std::string>(xd::reason) == "expired");
    CHECK_FALSE(e.contains(xd::original_expiration));
    CHECK(dead_lettered(fx, reason::expired) == 1);
}

TEST_CASE("DLX-26 a per-message expiry records original-expiration and removes the expiration "
          "property",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    auto m1 = make_message("", "Q", "m1");
    m1.properties.expiration = "1";
    REQUIRE_FALSE(fx.ch.basic_publish(m1));
    fx.advance(1ms);
    fx.publish("Q", "m2");
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    CHECK(body_of(dl[0]) == "m1");
    const auto e = x_death_entry(*dl[0].msg, 0);
    CHECK(e.get<std::string>(xd::reason) == "expired");
    CHECK(e.get<std::string>(xd::original_expiration) == "1");
    CHECK_FALSE(dl[0].msg->properties.expiration);
    CHECK(fx.drain("Q") == strings{"m2"});
}

TEST_CASE("original-expiration is recorded even when the queue TTL fired first (§0.3 8)",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue_arguments extra;
    extra.message_ttl = 10ms;
    declare_dead_letter_queues(fx, queue_type::classic, extra);
    auto m = make_message("", "Q", "m");
    m.properties.expiration = "60000";
    REQUIRE_FALSE(fx.ch.basic_publish(m));
    fx.advance(10ms);
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    CHECK(x_death_entry(*dl[0].msg, 0).get<std::string>(xd::original_expiration) == "60000");
    SECTION("and for rejections of a message with an expiration") {
        auto r = make_message("", "Q", "r");
        r.properties.expiration = "5000";
        REQUIRE_FALSE(fx.ch.basic_publish(r));
        auto d = fx.get("Q");
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
        auto rd = fx.drain_deliveries("DLQ");
        REQUIRE(rd.size() == 1);
        const auto e = x_death_entry(*rd[0].msg, 0);
        CHECK(e.get<std::string>(xd::reason) == "rejected");
        CHECK(e.get<std::string>(xd::original_expiration) == "5000");
        CHECK_FALSE(rd[0].msg->properties.expiration);
    }
}

TEST_CASE("DLX-27 a drop-head overflow has reason maxlen", "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    topology::queue_arguments extra;
    extra.max_length = 1;
    declare_dead_letter_queues(fx, type, extra);
    fx.publish("Q", {"m1", "m2"});
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    CHECK(x_death_entry(*dl[0].msg, 0).get<std::string>(xd::reason) == "maxlen");
    CHECK(text(*dl[0].msg, letterbox::headers::x_first_death_reason) == "maxlen");
}

TEST_CASE("DLX-28 dying twice in the same queue for the same reason keeps one entry with count 2",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", dlx_args("", std::nullopt, type));
    fx.publish("Q", "m");
    auto d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    d = fx.get("Q");
    REQUIRE(d);
    REQUIRE(x_death_of(*d->msg).size() == 1);
    CHECK(x_death_entry(*d->msg, 0).get<std::int64_t>(xd::count) == 1);
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    d = fx.get("Q");
    REQUIRE(d);
    REQUIRE(x_death_of(*d->msg).size() == 1);
    CHECK(x_death_entry(*d->msg, 0).get<std::int64_t>(xd::count) == 2);
}

TEST_CASE("DLX-29 each dead-lettering event in another queue adds an entry, most recent first",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_queue("Q", dlx_args("", "D1", type));
    fx.declare_queue("D1", dlx_args("", "D2", type));
    fx.declare_queue("D2", of_type(type));
    fx.publish("Q", "m");
    auto d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    d = fx.get("D1");
    REQUIRE(d);
    CHECK(x_death_queues(*d->msg) == strings{"Q"});
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    d = fx.get("D2");
    REQUIRE(d);
    CHECK(x_death_queues(*d->msg) == strings{"D1", "Q"});
    // The D1 entry records the exchange the message was published to before dying in D1.
    CHECK(x_death_entry(*d->msg, 0).get<std::string>(xd::exchange) == "");
    CHECK(strings_of(x_death_entry(*d->msg, 0).find(xd::routing_keys)) == strings{"D1"});
}

TEST_CASE("x-death order on 3.10 reverses the older entries on each event: a, b a, c a b, d b a c "
          "(§0.3 6)",
          "[transport][in_memory]") {
    auto step = [](in_memory::broker_profile profile, int steps) {
        broker_fixture fx(profile);
        const strings qs{"a", "b", "c", "d", "e"};
        for (int i = 0; i < 4; ++i)
            fx.declare_queue(qs[i], dlx_args("", qs[i + 1]));
        fx.declare_queue("e");
        fx.publish("a", "m");
        for (int i = 0; i < steps; ++i) {
            auto d = fx.get(qs[i]);
            REQUIRE(d);
            REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
        }
        auto got = fx.drain_deliveries(qs[steps]);
        REQUIRE(got.size() == 1);
        return x_death_queues(*got[0].msg);
    };
    const auto v310 = in_memory::broker_profile::rabbitmq_3_10();
    CHECK(step(v310, 1) == strings{"a"});
    CHECK(step(v310, 2) == strings{"b", "a"});
    CHECK(step(v310, 3) == strings{"c", "a", "b"});
    CHECK(step(v310, 4) == strings{"d", "b", "a", "c"});
    const auto v313 = in_memory::broker_profile::rabbitmq_3_13();
    CHECK(step(v313, 3) == strings{"c", "b", "a"});
    CHECK(step(v313, 4) == strings{"d", "c", "b", "a"});
}

TEST_CASE("x-death entries are keyed by queue and reason: a recurrence through another exchange "
          "keeps the first exchange, keys and time (§0.3 6)",
          "[transport][in_memory]") {
    broker_fixture fx;
    // Q rejects to DLQ through `dlx`; DLQ rejects back to Q through amq.direct.
    fx.declare_exchange("dlx", topology::exchange_type::direct);
    fx.declare_queue("Q", dlx_args("dlx", "DLQ"));
    fx.declare_queue("DLQ", dlx_args("amq.direct", "back"));
    fx.bind("DLQ", "dlx", "DLQ");
    fx.bind("Q", "amq.direct", "back");
    fx.publish("Q", "m");
    const auto t0 = std::chrono::time_point_cast<std::chrono::seconds>(fx.clock.wall_now());
    auto d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    fx.clock.advance(7s);
    d = fx.get("DLQ");
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    fx.clock.advance(7s);
    d = fx.get("Q");
    REQUIRE(d);
    CHECK(d->msg->exchange == "amq.direct");
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    const auto& m = *dl[0].msg;
    REQUIRE(x_death_queues(m) == strings{"Q", "DLQ"});
    const auto q = x_death_entry(m, 0);
    CHECK(q.get<std::int64_t>(xd::count) == 2);
    CHECK(q.get<std::string>(xd::exchange) == "");
    CHECK(strings_of(q.find(xd::routing_keys)) == strings{"Q"});
    CHECK(q.get<letterbox::timestamp>(xd::time) == t0);
}

TEST_CASE("DLX-31 without a dead-letter key the CC header survives dead-lettering and x-death "
          "appears only on the dead letter",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::direct);
    fx.declare_queue("Q", dlx_args("dlx", std::nullopt, type));
    fx.declare_queue("DLQ");
    fx.bind("DLQ", "dlx", "DLQ");
    REQUIRE_FALSE(fx.ch.basic_publish(with_cc("Q", "m1", {"DLQ"})));
    auto d1 = fx.get("Q");
    auto direct = fx.get("DLQ");
    CHECK_FALSE(d1->msg->headers.contains(letterbox::headers::x_death));
    CHECK_FALSE(direct->msg->headers.contains(letterbox::headers::x_death));
    REQUIRE_FALSE(fx.ch.basic_nack(d1->delivery_tag, false, false));
    CHECK(fx.count("DLQ") == tru(2, 1, 1));
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    CHECK(strings_of(dl[0].msg->headers.find(letterbox::headers::cc)) == strings{"DLQ"});
    CHECK(x_death_of(*dl[0].msg).size() == 1);
    CHECK(strings_of(x_death_entry(*dl[0].msg, 0).find(xd::routing_keys)) == strings{"Q", "DLQ"});
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

TEST_CASE("DLX-32 with a dead-letter key the CC header is removed on 3.10 and kept on 3.13 "
          "(§0.3 9)",
          "[transport][in_memory]") {
    auto run = [](in_memory::broker_profile profile) {
        broker_fixture fx(profile);
        declare_dead_letter_queues(fx, queue_type::classic);
        REQUIRE_FALSE(fx.ch.basic_publish(with_cc("Q", "m1", {"DLQ"})));
        auto d1 = fx.get("Q");
        REQUIRE(fx.get("DLQ"));
        REQUIRE_FALSE(fx.ch.basic_nack(d1->delivery_tag, false, false));
        CHECK(fx.count("DLQ") == tru(2, 1, 1));
        auto dl = fx.drain_deliveries("DLQ");
        REQUIRE(dl.size() == 1);
        CHECK(x_death_of(*dl[0].msg).size() == 1);
        // x-death routing-keys include the CC keys either way.
        CHECK(strings_of(x_death_entry(*dl[0].msg, 0).find(xd::routing_keys)) ==
              strings{"Q", "DLQ"});
        return dl[0].msg->headers.contains(letterbox::headers::cc);
    };
    CHECK_FALSE(run(in_memory::broker_profile::rabbitmq_3_10()));
    CHECK(run(in_memory::broker_profile::rabbitmq_3_13()));
}

TEST_CASE("DLX-33 BCC keys route the dead letter but are left out of the header and of "
          "routing-keys",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::direct);
    fx.declare_queue("Q", dlx_args("dlx", std::nullopt, type));
    fx.declare_queue("DLQ");
    fx.bind("DLQ", "dlx", "DLQ");
    REQUIRE_FALSE(fx.ch.basic_publish(with_cc("Q", "m1", {"cc 1", "cc 2"}, {"DLQ", "bcc 2"})));
    auto d1 = fx.get("Q");
    auto direct = fx.get("DLQ");
    CHECK_FALSE(direct->msg->headers.contains(letterbox::headers::bcc));
    REQUIRE_FALSE(fx.ch.basic_nack(d1->delivery_tag, false, false));
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 1);
    const auto& m = *dl[0].msg;
    CHECK_FALSE(m.headers.contains(letterbox::headers::bcc));
    CHECK(strings_of(m.headers.find(letterbox::headers::cc)) == strings{"cc 1", "cc 2"});
    CHECK(strings_of(x_death_entry(m, 0).find(xd::routing_keys)) == strings{"Q", "cc 1", "cc 2"});
}

TEST_CASE("DLX-34 the x-first-death headers are set at the first event and never change",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::direct);
    fx.declare_queue("Q", dlx_args("dlx", "DLQ", type));
    fx.declare_queue("DLQ", dlx_args("", "Q"));
    fx.bind("DLQ", "dlx", "DLQ");
    fx.publish("Q", "m");
    auto d = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    d = fx.get("DLQ");
    REQUIRE(d);
    CHECK(text(*d->msg, letterbox::headers::x_first_death_reason) == "rejected");
    CHECK(text(*d->msg, letterbox::headers::x_first_death_queue) == "Q");
    CHECK(text(*d->msg, letterbox::headers::x_first_death_exchange) == "");
    REQUIRE_FALSE(fx.ch.basic_nack(d->delivery_tag, false, false));
    d = fx.get("Q");
    REQUIRE(d);
    CHECK(x_death_queues(*d->msg) == strings{"DLQ", "Q"});
    CHECK(text(*d->msg, letterbox::headers::x_first_death_reason) == "rejected");
    CHECK(text(*d->msg, letterbox::headers::x_first_death_queue) == "Q");
    CHECK(text(*d->msg, letterbox::headers::x_first_death_exchange) == "");
}

TEST_CASE(
    "DLX-35 a headers DLX routes dead letters by x-first-death with all-with-x and any-with-x",
    "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::headers);
    fx.declare_queue("Q1", dlx_args("dlx", std::nullopt, type));
    fx.declare_queue("Q2", dlx_args("dlx", std::nullopt, type));
    fx.declare_queue("DLQ-expired");
    fx.declare_queue("DLQ-rejected");
    fx.bind("DLQ-expired", "dlx", "",
            {{"x-match", "all-with-x"},
             {"x-first-death-reason", "expired"},
             {"x-first-death-queue", "Q1"}});
    fx.bind("DLQ-rejected", "dlx", "",
            {{"x-match", "any-with-x"}, {"x-first-death-reason", "rejected"}});
    auto m1 = make_message("", "Q1", "m1");
    m1.properties.expiration = "0";
    REQUIRE_FALSE(fx.ch.basic_publish(m1));
    CHECK(fx.drain("DLQ-expired") == strings{"m1"});
    CHECK(fx.count("Q1") == tru(0, 0, 0));
    auto m2 = make_message("", "Q2", "m2");
    m2.properties.expiration = "0";
    REQUIRE_FALSE(fx.ch.basic_publish(m2));
    fx.advance(1000ms);
    CHECK(fx.drain("DLQ-expired").empty());
    CHECK(fx.drain("DLQ-rejected").empty());
    CHECK(fx.count("Q2") == tru(0, 0, 0));
    fx.publish("Q2", "m3");
    auto d = fx.get("Q2");
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
    CHECK(fx.drain("DLQ-rejected") == strings{"m3"});
    CHECK(fx.drain("DLQ-expired").empty());
    CHECK(fx.broker.counters().dead_letters_dropped_of(in_memory::dead_letter_drop::unroutable) ==
          1);
}

namespace {

letterbox::message with_client_history(std::string queue) {
    auto m = make_message("", std::move(queue), "m");
    letterbox::field_table entry{{"count", std::int64_t{3}},
                                 {"exchange", "upstream-x"},
                                 {"queue", "elsewhere"},
                                 {"reason", "expired"},
                                 {"routing-keys", letterbox::field_array{"k"}}};
    m.headers.set(letterbox::headers::x_death, letterbox::field_array{entry});
    return m;
}

} // namespace

TEST_CASE("a client-supplied x-death is kept and extended on 3.10 and ignored on 3.13 (§0.3 5)",
          "[transport][in_memory]") {
    SECTION("3.10 with client x-first-death headers") {
        broker_fixture fx;
        declare_dead_letter_queues(fx, queue_type::classic);
        auto m = with_client_history("Q");
        m.headers.set(letterbox::headers::x_first_death_reason, "expired");
        m.headers.set(letterbox::headers::x_first_death_queue, "elsewhere");
        m.headers.set(letterbox::headers::x_first_death_exchange, "upstream-x");
        REQUIRE_FALSE(fx.ch.basic_publish(m));
        auto d = fx.get("Q");
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
        auto dl = fx.drain_deliveries("DLQ");
        REQUIRE(dl.size() == 1);
        CHECK(x_death_queues(*dl[0].msg) == strings{"Q", "elsewhere"});
        CHECK(x_death_entry(*dl[0].msg, 1).get<std::int64_t>(xd::count) == 3);
        CHECK(text(*dl[0].msg, letterbox::headers::x_first_death_queue) == "elsewhere");
        CHECK(text(*dl[0].msg, letterbox::headers::x_first_death_reason) == "expired");
        CHECK(text(*dl[0].msg, letterbox::headers::x_first_death_exchange) == "upstream-x");
    }
    SECTION("3.10 without client x-first-death headers: none are added") {
        broker_fixture fx;
        declare_dead_letter_queues(fx, queue_type::classic);
        REQUIRE_FALSE(fx.ch.basic_publish(with_client_history("Q")));
        auto d = fx.get("Q");
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
        auto dl = fx.drain_deliveries("DLQ");
        REQUIRE(dl.size() == 1);
        CHECK(x_death_queues(*dl[0].msg) == strings{"Q", "elsewhere"});
        CHECK_FALSE(dl[0].msg->headers.contains(letterbox::headers::x_first_death_reason));
        CHECK_FALSE(dl[0].msg->headers.contains(letterbox::headers::x_first_death_queue));
    }
    SECTION("3.10 x-first-death headers without an x-death are overwritten") {
        broker_fixture fx;
        declare_dead_letter_queues(fx, queue_type::classic);
        auto m = make_message("", "Q", "m");
        m.headers.set(letterbox::headers::x_first_death_queue, "forged");
        REQUIRE_FALSE(fx.ch.basic_publish(m));
        auto d = fx.get("Q");
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
        auto dl = fx.drain_deliveries("DLQ");
        REQUIRE(dl.size() == 1);
        CHECK(text(*dl[0].msg, letterbox::headers::x_first_death_queue) == "Q");
    }
    SECTION("3.13.0-3.13.2 and 4.0: a new history starts (DLX-30)") {
        const auto profile = GENERATE(in_memory::broker_profile::rabbitmq_3_13_0(),
                                      in_memory::broker_profile::rabbitmq_4_0());
        INFO(profile.name);
        broker_fixture fx(profile);
        topology::queue_arguments extra;
        extra.message_ttl = 1ms;
        declare_dead_letter_queues(fx, queue_type::classic, extra);
        auto m = with_client_history("Q");
        m.headers.set(letterbox::headers::x_first_death_queue, "elsewhere");
        REQUIRE_FALSE(fx.ch.basic_publish(m));
        fx.advance(1ms);
        auto dl = fx.drain_deliveries("DLQ");
        REQUIRE(dl.size() == 1);
        CHECK(x_death_queues(*dl[0].msg) == strings{"Q"});
        CHECK(x_death_entry(*dl[0].msg, 0).get<std::string>(xd::reason) == "expired");
        CHECK(text(*dl[0].msg, letterbox::headers::x_first_death_queue) == "Q");
    }
}

TEST_CASE("DLX-38 to DLX-41 messages leaving a queue without a DLX are counted per reason",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    const auto& c = fx.broker.counters();
    SECTION("DLX-38 maxlen") {
        topology::queue_arguments args = of_type(type);
        args.max_length = 1;
        args.overflow = topology::overflow_behaviour::drop_head;
        fx.declare_queue("Q", args);
        for (int i = 0; i < 1000; ++i)
            fx.publish("Q", std::to_string(i));
        CHECK(c.discarded_of(reason::maxlen) == 999);
        CHECK(fx.count("Q") == tru(1, 1, 0));
    }
    SECTION("DLX-39 rejected") {
        fx.declare_queue("Q", of_type(type));
        for (int i = 0; i < 1000; ++i)
            fx.publish("Q", std::to_string(i));
        std::error_code ec;
        fx.ch.basic_consume(
            "Q",
            [&](const in_memory::basic_delivery& d) {
                REQUIRE_FALSE(fx.ch.basic_reject(d.delivery_tag, false));
            },
            ec);
        CHECK(c.discarded_of(reason::rejected) == 1000);
        CHECK(fx.count("Q") == tru(0, 0, 0));
    }
    SECTION("DLX-40 queue TTL 0") {
        auto args = of_type(type);
        args.message_ttl = 0ms;
        fx.declare_queue("Q", args);
        for (int i = 0; i < 1000; ++i)
            fx.publish("Q", std::to_string(i));
        CHECK(c.discarded_of(reason::expired) == 1000);
        CHECK(fx.count("Q") == tru(0, 0, 0));
    }
    SECTION("DLX-41 per-message expiration 0") {
        fx.declare_queue("Q", of_type(type));
        for (int i = 0; i < 1000; ++i) {
            auto m = make_message("", "Q", std::to_string(i));
            m.properties.expiration = "0";
            REQUIRE_FALSE(fx.ch.basic_publish(m));
        }
        CHECK(c.discarded_of(reason::expired) == 1000);
        CHECK(fx.count("Q") == tru(0, 0, 0));
    }
    CHECK(c.dead_lettered_total() == 0);
}

TEST_CASE("DLX-42 a message bigger than x-max-length-bytes evicts everything and is dead-lettered "
          "itself",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    topology::queue_arguments extra;
    extra.max_length_bytes = 1000;
    extra.overflow = topology::overflow_behaviour::drop_head;
    declare_dead_letter_queues(fx, type, extra);
    fx.publish("Q", {"m1", "m2"});
    fx.publish("Q", std::string(1500, 'L'));
    CHECK(fx.count("Q") == tru(0, 0, 0));
    auto dl = fx.drain("DLQ");
    REQUIRE(dl.size() == 3);
    CHECK(dl[0] == "m1");
    CHECK(dl[1] == "m2");
    CHECK(dl[2].size() == 1500);
    CHECK(dead_lettered(fx, reason::maxlen) == 3);
}

TEST_CASE("DLX-43 nack of tag 0 with multiple dead-letters the consumed messages in order",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    recorder r;
    std::error_code ec;
    fx.ch.basic_consume("Q", r.on_delivery(), ec);
    fx.publish("Q", {"m1", "m2"});
    REQUIRE(r.deliveries.size() == 2);
    REQUIRE_FALSE(fx.ch.basic_nack(0, true, false));
    CHECK(fx.drain("DLQ") == strings{"m1", "m2"});
}

TEST_CASE("DLX-44 closing a channel with unsettled deliveries past delivery limit 0 dead-letters "
          "them in order",
          "[transport][in_memory]") {
    broker_fixture fx;
    topology::queue_arguments extra;
    extra.delivery_limit = 0;
    declare_dead_letter_queues(fx, queue_type::quorum, extra);
    auto ch2 = fx.open_channel();
    recorder r;
    std::error_code ec;
    ch2.basic_consume("Q", r.on_delivery(), ec);
    fx.publish("Q", {"m1", "m2"});
    REQUIRE(r.bodies() == strings{"m1", "m2"});
    ch2.close();
    CHECK(fx.count("Q") == tru(0, 0, 0));
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 2);
    CHECK(body_of(dl[0]) == "m1");
    CHECK(body_of(dl[1]) == "m2");
    CHECK(x_death_entry(*dl[0].msg, 0).get<std::string>(xd::reason) == "delivery_limit");
    CHECK(dead_lettered(fx, reason::delivery_limit) == 2);
}

TEST_CASE("DLX-45 expired messages behind a live head are dead-lettered only when they reach the "
          "head",
          "[transport][in_memory]") {
    const auto type = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(type));
    broker_fixture fx;
    declare_dead_letter_queues(fx, type);
    fx.publish("Q", "m1");
    for (const char* b : {"m2", "m3"}) {
        auto m = make_message("", "Q", b);
        m.properties.expiration = "1";
        REQUIRE_FALSE(fx.ch.basic_publish(m));
    }
    fx.advance(5ms);
    CHECK(fx.count("Q") == tru(3, 3, 0));
    CHECK(fx.drain("DLQ").empty());
    CHECK(fx.get_body("Q") == "m1");
    CHECK(fx.drain("DLQ") == strings{"m2", "m3"});
    CHECK(fx.count("Q") == tru(1, 0, 1));
}

TEST_CASE("DLX-46 dead letters flow between classic and quorum queues", "[transport][in_memory]") {
    const auto from = GENERATE(queue_type::classic, queue_type::quorum);
    const auto to = GENERATE(queue_type::classic, queue_type::quorum);
    INFO(type_name(from) << " -> " << type_name(to));
    broker_fixture fx;
    fx.declare_exchange("dlx", topology::exchange_type::direct);
    fx.declare_queue("Q", dlx_args("dlx", "DLQ", from));
    fx.declare_queue("DLQ", of_type(to));
    fx.bind("DLQ", "dlx", "DLQ");
    fx.publish("Q", {"m1", "m2"});
    auto d1 = fx.get("Q");
    auto d2 = fx.get("Q");
    REQUIRE_FALSE(fx.ch.basic_reject(d2->delivery_tag, false));
    REQUIRE_FALSE(fx.ch.basic_reject(d1->delivery_tag, false));
    auto dl = fx.drain_deliveries("DLQ");
    REQUIRE(dl.size() == 2);
    CHECK(body_of(dl[0]) == "m2");
    CHECK(body_of(dl[1]) == "m1");
    CHECK(x_death_queues(*dl[0].msg) == strings{"Q"});
}

} // namespace unit_transport_in_memory_dead_lettering
