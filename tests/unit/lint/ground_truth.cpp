// SPDX-License-Identifier: BSL-1.0

// The ground truth of lint::rules: for each rule about broker behaviour, the topology it flags
// is declared on the in-memory broker (the RabbitMQ model, checked against a real 3.10.8 by
// tests/integration/amqp_differential.cpp) with the profile the rule names, and the behaviour
// the rule predicts happens there. docs/topology-lint.md cites these tests as evidence.

#include <letterbox/lint/check_topology.hpp>

#include "unit/transport/in_memory/scenario_fixture.hpp"

#include <letterbox/field_table.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/rules.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/in_memory/broker_counters.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace unit_lint_ground_truth {

using namespace broker_scenarios;
namespace lint = letterbox::lint;
using profile = in_memory::broker_profile;
using drop = in_memory::dead_letter_drop;
using reason = in_memory::dead_letter_reason;
using strings = std::vector<std::string>;

namespace {

topology::queue queue(std::string name, topology::queue_arguments a = {}) {
    return {.name = std::move(name), .arguments = a.to_table()};
}

topology::queue_arguments to(std::string exchange, std::optional<std::string> key = std::nullopt,
                             topology::queue_type type = topology::queue_type::classic) {
    return dlx_args(std::move(exchange), std::move(key), type);
}

topology::queue_arguments expiring(std::string exchange, std::string key) {
    auto a = to(std::move(exchange), std::move(key));
    a.message_ttl = 5ms;
    return a;
}

/// Whether the lint reports `code` for `t` on `p`.
bool flags(const lint::broker_topology& t, const profile& p, std::string_view code,
           const std::vector<lint::consumer_settings>& consumers = {}) {
    for (const auto& f : lint::check_topology(t, p, consumers))
        if (f.code == code)
            return true;
    return false;
}

/// Declares every exchange, queue and binding of `t` on the fixture's channel.
void declare(broker_fixture& fx, const lint::broker_topology& t) {
    for (const auto& x : t.exchanges)
        REQUIRE_FALSE(fx.ch.exchange_declare(x));
    for (const auto& q : t.queues)
        REQUIRE_FALSE(fx.ch.queue_declare(q));
    for (const auto& b : t.bindings) {
        const std::error_code ec =
            b.kind == topology::destination_kind::queue
                ? fx.ch.queue_bind(b.destination, b.source, b.routing_key, b.arguments)
                : fx.ch.exchange_bind(b.destination, b.source, b.routing_key, b.arguments);
        REQUIRE_FALSE(ec);
    }
}

/// Publishes one message to `queue`, takes it and rejects it without requeue.
void reject_one(broker_fixture& fx, const std::string& queue) {
    fx.publish(queue, "m");
    auto d = fx.get(queue);
    REQUIRE(d);
    REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
}

std::size_t everything(const broker_fixture& fx) {
    return fx.broker.total_ready() + fx.broker.total_unacked();
}

} // namespace

TEST_CASE("LB-DLX-MISSING: a rejected message whose dead-letter exchange does not exist "
          "vanishes",
          "[lint]") {
    const lint::broker_topology t{.queues = {queue("orders", to("gone", "dlq")), queue("dlq")}};
    REQUIRE(flags(t, profile::rabbitmq_3_10(), lint::codes::dlx_missing));
    broker_fixture fx;
    declare(fx, t);
    reject_one(fx, "orders");
    CHECK(everything(fx) == 0);
    CHECK(fx.broker.counters().dead_letters_dropped_of(drop::exchange_missing) == 1);
}

TEST_CASE("LB-DLX-UNROUTABLE: a dead letter that its exchange routes nowhere vanishes", "[lint]") {
    const lint::broker_topology t{
        .exchanges = {{.name = "dlx"}},
        .queues = {queue("orders", to("dlx", "dead")), queue("dlq")},
        .bindings = {{.source = "dlx", .destination = "dlq", .routing_key = "other"}}};
    REQUIRE(flags(t, profile::rabbitmq_3_10(), lint::codes::dlx_unroutable));
    broker_fixture fx;
    declare(fx, t);
    reject_one(fx, "orders");
    CHECK(everything(fx) == 0);
    CHECK(fx.broker.counters().dead_letters_dropped_of(drop::unroutable) == 1);
}

TEST_CASE("LB-DLX-NONE: a rejected message of a queue without a dead-letter exchange vanishes",
          "[lint]") {
    const lint::broker_topology t{.queues = {queue("orders")}};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "orders", .failures = lint::failure_handling::reject}};
    REQUIRE(flags(t, profile::rabbitmq_4_0(), lint::codes::dlx_none, consumers));
    broker_fixture fx(profile::rabbitmq_4_0());
    declare(fx, t);
    reject_one(fx, "orders");
    CHECK(everything(fx) == 0);
    CHECK(fx.broker.counters().discarded_of(reason::rejected) == 1);
}

TEST_CASE("LB-DLX-CYCLE: a message in a ring of queues that only expire is dropped on its "
          "second visit",
          "[lint]") {
    const lint::broker_topology t{
        .queues = {queue("a", expiring("", "b")), queue("b", expiring("", "a"))}};
    for (const auto& p : {profile::rabbitmq_3_10(), profile::rabbitmq_4_0()}) {
        INFO(p.name);
        REQUIRE(flags(t, p, lint::codes::dlx_cycle));
        broker_fixture fx(p);
        declare(fx, t);
        fx.publish("a", "m");
        for (int i = 0; i < 4; ++i)
            fx.advance(5ms);
        CHECK(everything(fx) == 0);
        CHECK(fx.broker.counters().dead_letters_dropped_of(drop::cycle) == 1);
    }
}

TEST_CASE("LB-DLX-RING: a reject-expire-expire ring loses the message on its second lap on "
          "3.10 and not on 3.13",
          "[lint]") {
    const lint::broker_topology t{.queues = {queue("b", to("", "a2")),
                                             queue("a2", expiring("", "a3")),
                                             queue("a3", expiring("", "b"))}};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "b", .failures = lint::failure_handling::reject}};
    auto laps = [&](const profile& p) {
        broker_fixture fx(p);
        declare(fx, t);
        fx.publish("b", "m");
        int completed = 0;
        for (int lap = 0; lap < 3; ++lap) {
            auto d = fx.get("b");
            if (!d)
                break;
            REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
            fx.advance(5ms);
            fx.advance(5ms);
            completed += fx.ready("b") == 1;
        }
        return completed;
    };
    REQUIRE(flags(t, profile::rabbitmq_3_10(), lint::codes::dlx_ring, consumers));
    CHECK(laps(profile::rabbitmq_3_10()) == 1); // back after lap 1, gone on lap 2
    REQUIRE_FALSE(flags(t, profile::rabbitmq_3_13(), lint::codes::dlx_ring, consumers));
    CHECK(laps(profile::rabbitmq_3_13()) == 3);
}

TEST_CASE("LB-DLX-RING: the retry topology's reject-expire ring keeps the message on 3.10",
          "[lint]") {
    const topology::retry_topology topo{
        .queue = "orders", .delays = {5ms}, .rejects = topology::rejects_go_to::retry_queue};
    const lint::broker_topology t{.queues = topo.queues()};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "orders",
         .failures = lint::failure_handling::reject,
         .retry_queues = {topo.retry_queue_name(5ms)}}};
    REQUIRE(lint::check_topology(t, profile::rabbitmq_3_10(), consumers).empty());
    broker_fixture fx;
    declare(fx, t);
    fx.publish("orders", "m");
    for (int lap = 0; lap < 5; ++lap) {
        INFO("lap " << lap);
        auto d = fx.get("orders");
        REQUIRE(d);
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
        fx.advance(5ms);
    }
    CHECK(fx.ready("orders") == 1);
    CHECK(fx.broker.counters().dead_letters_dropped_of(drop::cycle) == 0);
}

TEST_CASE("LB-REQUEUE-UNBOUNDED: a classic queue redelivers a requeued message without end and "
          "a quorum queue with a limit stops",
          "[lint]") {
    auto limited = of_type(topology::queue_type::quorum);
    limited.delivery_limit = 3;
    const lint::broker_topology t{.queues = {queue("classic"), queue("limited", limited)}};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "classic",
         .failures = lint::failure_handling::requeue,
         .attempts_limited = false},
        {.queue = "limited",
         .failures = lint::failure_handling::requeue,
         .attempts_limited = false}};
    const auto found = lint::check_topology(t, profile::rabbitmq_3_10(), consumers);
    REQUIRE(found.size() >= 2);
    CHECK(found[0].objects[0] == "consumer of 'classic'");
    CHECK(found[0].level == lint::severity::error);
    broker_fixture fx;
    declare(fx, t);
    fx.publish("classic", "m");
    fx.publish("limited", "m");
    for (int i = 0; i < 50; ++i)
        if (auto d = fx.get("classic"))
            REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
    CHECK(fx.ready("classic") == 1);
    int deliveries = 0;
    while (auto d = fx.get("limited")) {
        ++deliveries;
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
    }
    CHECK(deliveries == 4);
    CHECK(fx.count("limited") == tru(0, 0, 0));
}

TEST_CASE("LB-QQ-DELIVERY-LIMIT-DEFAULT: on 4.0 a quorum queue without a limit drops a "
          "message after 20 returns and 3.10 keeps it",
          "[lint]") {
    const lint::broker_topology t{
        .queues = {queue("orders", of_type(topology::queue_type::quorum))}};
    auto returns = [&](const profile& p) {
        broker_fixture fx(p);
        declare(fx, t);
        fx.publish("orders", "m");
        int n = 0;
        while (n < 30) {
            auto d = fx.get("orders");
            if (!d)
                break;
            ++n;
            REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
        }
        return n;
    };
    REQUIRE(flags(t, profile::rabbitmq_4_0(), lint::codes::qq_delivery_limit_default));
    CHECK(returns(profile::rabbitmq_4_0()) == 21);
    REQUIRE_FALSE(flags(t, profile::rabbitmq_3_10(), lint::codes::qq_delivery_limit_default));
    CHECK(returns(profile::rabbitmq_3_10()) == 30);
}

TEST_CASE("LB-QQ-DELIVERY-LIMIT-NEGATIVE: a delivery limit of -1 drops a message at its first "
          "return on 3.10 and never on 4.0",
          "[lint]") {
    auto a = of_type(topology::queue_type::quorum);
    a.delivery_limit = -1;
    const lint::broker_topology t{.queues = {queue("orders", a)}};
    auto after_returns = [&](const profile& p) {
        broker_fixture fx(p);
        declare(fx, t);
        fx.publish("orders", "m");
        for (int i = 0; i < 5; ++i)
            if (auto d = fx.get("orders"))
                REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, true));
        return fx.count("orders").total;
    };
    REQUIRE(flags(t, profile::rabbitmq_3_10(), lint::codes::qq_delivery_limit_negative));
    CHECK(after_returns(profile::rabbitmq_3_10()) == 0);
    REQUIRE_FALSE(flags(t, profile::rabbitmq_4_0(), lint::codes::qq_delivery_limit_negative));
    CHECK(after_returns(profile::rabbitmq_4_0()) == 1);
}

TEST_CASE("LB-QQ-ARGUMENT: the broker refuses a quorum queue with x-max-priority and a classic "
          "queue with x-delivery-limit",
          "[lint]") {
    auto qq = queue("qq", of_type(topology::queue_type::quorum));
    qq.arguments.set("x-max-priority", std::int64_t{5});
    auto classic = queue("classic");
    classic.arguments.set("x-delivery-limit", std::int64_t{3});
    for (const auto& q : {qq, classic}) {
        INFO(q.name);
        REQUIRE(flags({.queues = {q}}, profile::rabbitmq_3_10(), lint::codes::qq_argument));
        broker_fixture fx;
        CHECK(fx.ch.queue_declare(q) == errc::precondition_failed);
    }
}

TEST_CASE("LB-QQ-OVERFLOW-DLX: a quorum queue with reject-publish-dlx accepts the publish and "
          "drops the head",
          "[lint]") {
    auto a = to("", "dlq", topology::queue_type::quorum);
    a.max_length = 1;
    a.overflow = topology::overflow_behaviour::reject_publish_dlx;
    const lint::broker_topology t{.queues = {queue("orders", a), queue("dlq")}};
    REQUIRE(flags(t, profile::rabbitmq_4_0(), lint::codes::qq_overflow_dlx));
    broker_fixture fx(profile::rabbitmq_4_0());
    declare(fx, t);
    fx.publish("orders", {"old", "new"});
    CHECK(fx.drain("orders") == strings{"new"});
    CHECK(fx.drain("dlq") == strings{"old"});
}

TEST_CASE("LB-QQ-GLOBAL-QOS: consuming a quorum queue with global qos closes the connection "
          "with 540, and not on 4.3",
          "[lint]") {
    const lint::broker_topology t{
        .queues = {queue("orders", of_type(topology::queue_type::quorum))}};
    const std::vector<lint::consumer_settings> consumers{{.queue = "orders", .global_qos = true}};
    auto consume = [&](const profile& p) {
        broker_fixture fx(p);
        declare(fx, t);
        REQUIRE_FALSE(fx.ch.basic_qos(10, true));
        recorder r;
        std::error_code ec;
        fx.ch.basic_consume("orders", r.on_delivery(), ec);
        return fx.conn.is_open();
    };
    REQUIRE(flags(t, profile::rabbitmq_4_0(), lint::codes::qq_global_qos, consumers));
    CHECK_FALSE(consume(profile::rabbitmq_4_0()));
    REQUIRE_FALSE(flags(t, profile::rabbitmq_4_3(), lint::codes::qq_global_qos, consumers));
    CHECK(consume(profile::rabbitmq_4_3()));
}

TEST_CASE("LB-RETRY-NO-ROUTE-BACK: a retry queue whose dead-letter key names another queue "
          "never returns the message",
          "[lint]") {
    const lint::broker_topology t{.queues = {queue("orders"),
                                             queue("orders.retry", expiring("", "orders.dlq")),
                                             queue("orders.dlq")}};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "orders", .retry_queues = {"orders.retry"}}};
    REQUIRE(flags(t, profile::rabbitmq_3_10(), lint::codes::retry_no_route_back, consumers));
    broker_fixture fx;
    declare(fx, t);
    fx.publish("orders.retry", "m"); // what the redelivery layer does
    fx.advance(5ms);
    CHECK(fx.ready("orders") == 0);
    CHECK(fx.ready("orders.dlq") == 1);
}

TEST_CASE("LB-XDEATH-CLIENT: a republished message starts a new x-death history on 4.0 and "
          "keeps it on 3.10",
          "[lint]") {
    const lint::broker_topology t{.queues = {queue("orders", to("", "dlq")), queue("dlq")}};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "orders", .attempts_from_x_death = true}};
    auto history = [&](const profile& p) {
        broker_fixture fx(p);
        declare(fx, t);
        // A replay: the dead letter published again by a client, with its x-death.
        reject_one(fx, "orders");
        auto dead = fx.get("dlq");
        REQUIRE(dead);
        auto replay = make_message("", "orders", "m");
        replay.headers = dead->msg->headers;
        REQUIRE_FALSE(fx.ch.basic_publish(replay));
        auto d = fx.get("orders");
        REQUIRE(d);
        REQUIRE_FALSE(fx.ch.basic_reject(d->delivery_tag, false));
        auto again = fx.get("dlq");
        REQUIRE(again);
        return x_death_entry(*again->msg, 0)
            .get<std::int64_t>(letterbox::headers::x_death_field::count)
            .value_or(-1);
    };
    REQUIRE(flags(t, profile::rabbitmq_4_0(), lint::codes::xdeath_client, consumers));
    CHECK(history(profile::rabbitmq_4_0()) == 1);
    REQUIRE_FALSE(flags(t, profile::rabbitmq_3_10(), lint::codes::xdeath_client, consumers));
    CHECK(history(profile::rabbitmq_3_10()) == 2);
}

TEST_CASE("LB-TOPIC-HASH-WORDS: a binding with three hash words is refused on 4.3 and accepted "
          "on 3.10",
          "[lint]") {
    const lint::broker_topology t{
        .exchanges = {{.name = "events", .type = topology::exchange_type::topic}},
        .queues = {queue("q")},
        .bindings = {{.source = "events", .destination = "q", .routing_key = "#.#.#"}}};
    REQUIRE(flags(t, profile::rabbitmq_4_3(), lint::codes::topic_hash_words));
    {
        broker_fixture fx(profile::rabbitmq_4_3());
        REQUIRE_FALSE(fx.ch.exchange_declare(t.exchanges[0]));
        REQUIRE_FALSE(fx.ch.queue_declare(t.queues[0]));
        CHECK(fx.ch.queue_bind("q", "events", "#.#.#") == errc::precondition_failed);
    }
    REQUIRE_FALSE(flags(t, profile::rabbitmq_3_10(), lint::codes::topic_hash_words));
    broker_fixture fx;
    declare(fx, t);
}

} // namespace unit_lint_ground_truth
