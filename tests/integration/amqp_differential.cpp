// SPDX-License-Identifier: BSL-1.0
// Differential tests: each scenario runs on the in-memory RabbitMQ model and on a real RabbitMQ
// (the one LETTERBOX_AMQP_URL names), through the operations of `letterbox::queue_reader` that
// both transports have, and the two observation traces must be equal (differential_world.hpp
// says what a trace keeps and what it leaves out). The scenarios follow the model's own scenario
// tests (tests/unit/transport/in_memory/; ids from research/reliability-anchors.md part (a)):
// routing, requeue order, prefetch, dead-lettering with x-death, TTL, max-length, confirms and
// returns, a channel closed by an unknown delivery tag, single active consumer, the
// consistent-hash exchange (the broker's rabbitmq_consistent_hash_exchange plugin, which
// tests/tools/rabbitmq.sh enables), direct reply-to and the consumer timeout. A difference means
// the model is wrong, the amqp transport is wrong, or the broker version differs (a
// `broker_profile` field).
//
// Every case is hidden ([.integration]) and runs in `make test` with the broker it starts.

// Named here (not only in differential_world.hpp): tests/CMakeLists.txt builds a source only
// with the components its own includes name.
#include <letterbox/amqp/transport.hpp>

#include "differential_world.hpp"

#include <letterbox/headers.hpp>
#include <letterbox/request_client.hpp>
#include <letterbox/topology/exchange.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace integration_amqp_differential {

static_assert(letterbox::queue_reader<letterbox::in_memory::transport>);
static_assert(letterbox::queue_reader<letterbox::amqp::transport>);

namespace {

using namespace differential;
using letterbox::topology::exchange_type;
using letterbox::topology::overflow_behaviour;
using letterbox::topology::queue_arguments;
using letterbox::topology::queue_type;

/// `LETTERBOX_DIFFERENTIAL(scenario)`: the scenario function template as a callable for
/// `compare`, which instantiates it for each world.
#define LETTERBOX_DIFFERENTIAL(scenario)                                                           \
    [](auto& world, const std::string& prefix) {                                                   \
        return scenario(world, prefix);                                                            \
    }

queue_arguments dead_lettering_to(std::string exchange, std::string key, queue_type type) {
    queue_arguments a;
    a.dead_letter_exchange = std::move(exchange);
    a.dead_letter_routing_key = std::move(key);
    a.type = type;
    return a;
}

std::string type_name(queue_type t) {
    return std::string(letterbox::topology::to_string(t));
}

/// The kinds of queue whose requeue order differs (§0.3 1): classic, quorum, and quorum with a
/// delivery limit.
std::vector<std::pair<std::string, queue_arguments>> requeue_kinds() {
    queue_arguments classic;
    queue_arguments quorum;
    quorum.type = queue_type::quorum;
    queue_arguments limited = quorum;
    limited.delivery_limit = 5;
    return {{"classic", classic}, {"quorum", quorum}, {"quorum-limited", limited}};
}

// ---- routing ---------------------------------------------------------------------------------

// RMQ-RT-01: a subset of routing_SUITE's `topic` table (queue, binding key).
const std::vector<std::pair<std::string, std::string>> topic_bindings = {
    {"t1", "a.b.c"}, {"t2", "a.*.c"},  {"t3", "a.#.b"}, {"t5", "#"},
    {"t7", "#.b"},   {"t8", "*.*"},    {"t9", "a.*"},   {"t10", "*.b.c"},
    {"t11", "a.#"},  {"t14", "a.b.b"}, {"t17", ""},     {"t18", "*.*.*"},
    {"t21", "*.#"},  {"t22", "#.*.#"}, {"t25", "*"},    {"t26", "#.b.#"},
};

const std::vector<std::string> topic_keys = {
    "a.b.c",
    "a.b",
    "a.b.b",
    "",
    "b.c.c",
    "a.a.a.a.a",
    "vodka.martini",
    "oneword",
    "nothing.here.at.all",
};

/// RMQ-RT-01 phase 1 (subset), then RT-02's literal `#` inside a word: every key is published
/// once; each queue is then drained, showing which keys it received, in publish order.
template <class World>
trace topic_routing(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto x = s.name("X");
    s.declare_exchange(x, exchange_type::topic);
    for (const auto& [q, key] : topic_bindings) {
        s.declare_queue(s.name(q));
        s.bind(s.name(q), x, key);
    }
    s.declare_queue(s.name("literal"));
    s.bind(s.name("literal"), x, "simply#carrots");
    for (const auto& key : topic_keys)
        s.publish(x, key, "k=" + key);
    s.publish(x, "simplycarrots", "k=simplycarrots");
    s.publish(x, "simply#carrots", "k=simply#carrots");
    for (const auto& [q, key] : topic_bindings)
        s.drain(s.name(q));
    s.drain(s.name("literal"));
    s.close();
    return out;
}

/// RMQ-RT-06/07: direct and fanout exchanges, the default exchange, and an exchange-to-exchange
/// binding; unroutable publishes complete with no_route.
template <class World>
trace direct_fanout_and_default_routing(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto direct = s.name("direct");
    const auto fanout = s.name("fanout");
    s.declare_exchange(direct, exchange_type::direct);
    s.declare_exchange(fanout, exchange_type::fanout);
    for (const char* q : {"d1", "d2", "f1", "f2"})
        s.declare_queue(s.name(q));
    s.bind(s.name("d1"), direct, "k1");
    s.bind(s.name("d2"), direct, "k1");
    s.bind(s.name("d2"), direct, "k2");
    s.bind(s.name("f1"), fanout, "ignored");
    s.bind(s.name("f2"), fanout, "");
    // direct -> fanout for key k3: a message routed through both hops reaches f1 and f2.
    s.bind(fanout, direct, "k3", {}, letterbox::topology::destination_kind::exchange);
    for (const char* key : {"k1", "k2", "k3", "k4", "K1"})
        s.publish(direct, key, std::string("direct ") + key);
    s.publish(fanout, "anything", "fanout 1");
    s.publish(fanout, "", "fanout 2");
    s.publish("", s.name("d1"), "default d1");
    s.publish("", s.name("missing"), "default missing");
    for (const char* q : {"d1", "d2", "f1", "f2"})
        s.drain(s.name(q));
    s.close();
    return out;
}

/// RMQ-RT-10 and §0.3 12: x-match all and any, a void binding value (presence), values of
/// different integer types, and x- headers, which plain all/any ignore on 3.10.
template <class World>
trace headers_routing(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto h = s.name("H");
    s.declare_exchange(h, exchange_type::headers);
    for (const char* q : {"all", "any", "present", "xall"})
        s.declare_queue(s.name(q));
    using letterbox::field_table;
    s.bind(s.name("all"), h, "", field_table{{"x-match", "all"}, {"a", "1"}, {"b", "2"}});
    s.bind(s.name("any"), h, "", field_table{{"x-match", "any"}, {"a", "1"}, {"b", "2"}});
    s.bind(s.name("present"), h, "",
           field_table{{"x-match", "all"}, {"p", letterbox::field_value{}}});
    s.bind(s.name("xall"), h, "",
           field_table{{"x-match", "all"}, {"n", std::int32_t{7}}, {"x-tag", "t"}});
    const std::vector<std::pair<std::string, field_table>> messages = {
        {"a1 b2", field_table{{"a", "1"}, {"b", "2"}}},
        {"a1", field_table{{"a", "1"}}},
        {"b3", field_table{{"b", "3"}}},
        {"a1 b2 c3", field_table{{"a", "1"}, {"b", "2"}, {"c", "3"}}},
        {"p=void", field_table{{"p", letterbox::field_value{}}}},
        {"p=text", field_table{{"p", "text"}}},
        {"n=int32 7", field_table{{"n", std::int32_t{7}}}},
        {"n=int64 7", field_table{{"n", std::int64_t{7}}}},
        {"n=text 7", field_table{{"n", "7"}}},
        {"n=7 x-tag=t", field_table{{"n", std::int32_t{7}}, {"x-tag", "t"}}},
        {"none", field_table{}},
    };
    for (const auto& [body, headers] : messages)
        s.publish(h, "", body, [&](letterbox::message& m) { m.headers = headers; });
    for (const char* q : {"all", "any", "present", "xall"})
        s.drain(s.name(q));

    // How values of different AMQP types compare: one binding per value, then one message per
    // type of the same number.
    const auto numbers = s.name("numbers");
    s.declare_exchange(numbers, exchange_type::headers);
    const std::vector<std::pair<std::string, letterbox::field_value>> bound = {
        {"int32", std::int32_t{7}},
        {"uint8", std::uint8_t{7}},
        {"double", 2.5},
        {"decimal", letterbox::decimal{1, 25}},
    };
    for (const auto& [q, value] : bound) {
        s.declare_queue(s.name(q));
        s.bind(s.name(q), numbers, "", field_table{{"x-match", "any"}, {"v", value}});
    }
    const std::vector<std::pair<std::string, letterbox::field_value>> sent = {
        {"int8 7", std::int8_t{7}},
        {"uint8 7", std::uint8_t{7}},
        {"int16 7", std::int16_t{7}},
        {"uint16 7", std::uint16_t{7}},
        {"int32 7", std::int32_t{7}},
        {"uint32 7", std::uint32_t{7}},
        {"int64 7", std::int64_t{7}},
        {"double 7", 7.0},
        {"float 2.5", 2.5F},
        {"double 2.5", 2.5},
        {"decimal 2.5", letterbox::decimal{1, 25}},
        {"timestamp 7", letterbox::timestamp{std::chrono::seconds{7}}},
        {"int64 2", std::int64_t{2}},
    };
    for (const auto& [body, value] : sent)
        s.publish(numbers, "", body, [&](letterbox::message& m) {
            m.headers = field_table{{"v", value}};
        });
    for (const auto& [q, value] : bound)
        s.drain(s.name(q));
    s.close();
    return out;
}

// ---- requeue order and prefetch --------------------------------------------------------------

/// RMQ-ACK-24 / DLX-08 with basic.get: nack and reject with requeue, out of order; a classic
/// queue puts them back at their original positions, a quorum queue on 3.10 at the back, and a
/// quorum queue with a delivery limit at the front, in the order they were returned (§0.3 1).
template <class World>
trace requeue_order_with_get(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    for (const auto& [kind, a] : requeue_kinds()) {
        const auto q = s.name("Q-" + kind);
        s.declare_queue(q, a);
        for (const char* body : {"m1", "m2", "m3", "m4", "m5"})
            s.publish("", q, body);
        std::vector<letterbox::delivery> got;
        for (int i = 0; i < 5; ++i)
            if (auto d = s.get(q))
                got.push_back(*d);
        REQUIRE(got.size() == 5);
        s.nack(got[3], true);
        s.reject(got[1], true);
        s.ack(got[0]);
        s.await_depth(q, 2);
        s.drain(q);
        s.ack(got[2]);
        s.ack(got[4]);
        s.depth(q);
    }
    s.close();
    return out;
}

/// §0.3 1 with messages still ready behind the returned ones: where a nack or reject with
/// requeue puts a message. Classic: back at its original position. Quorum without a delivery
/// limit: at the back, in return order. Quorum with a delivery limit: at the front, in return
/// order, with x-delivery-count incremented.
template <class World>
trace requeue_position_among_ready_messages(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    for (const auto& [kind, a] : requeue_kinds()) {
        const auto q = s.name("R-" + kind);
        s.declare_queue(q, a);
        for (const char* body : {"m1", "m2", "m3", "m4", "m5"})
            s.publish("", q, body);
        auto m1 = s.get(q);
        auto m2 = s.get(q);
        auto m3 = s.get(q);
        REQUIRE((m1 && m2 && m3));
        s.nack(*m3, true);
        s.reject(*m1, true);
        s.ack(*m2);
        s.await_depth(q, 4);
        s.drain(q);
    }
    s.close();
    return out;
}

/// RMQ-ACK-13 and ACK-25: a consumer's nacked and rejected deliveries come back to it marked
/// redelivered, in the order they were returned.
template <class World>
trace requeue_order_with_consumer(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    for (const auto& [kind, a] : requeue_kinds()) {
        const auto q = s.name("C-" + kind);
        s.declare_queue(q, a);
        for (const char* body : {"m1", "m2", "m3", "m4"})
            s.publish("", q, body);
        auto c = s.consume(q, 10);
        s.await_deliveries(c, 4);
        s.note_deliveries(c);
        REQUIRE(c.size() >= 4);
        s.nack(c[1], true);
        s.await_deliveries(c, 5);
        s.reject(c[3], true);
        s.await_deliveries(c, 6);
        s.note_deliveries(c, 4);
        for (std::size_t i = 0; i < c.size(); ++i)
            if (i != 1 && i != 3)
                s.ack(c[i]);
        s.cancel(c);
        s.depth(q);
    }
    s.close();
    return out;
}

/// RMQ-ACK-05/20 through the transport: a transport that closes with unacknowledged deliveries
/// gives them back; they return in their original order, marked redelivered, and the acked ones
/// stay gone.
template <class World>
trace lost_channel_requeue_order(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto q = s.name("Q");
    s.declare_queue(q);
    for (const char* body : {"m1", "m2", "m3", "m4", "m5"})
        s.publish("", q, body);
    {
        session other(w, prefix, out);
        auto c = other.consume(q, 10);
        other.await_deliveries(c, 5);
        REQUIRE(c.size() == 5);
        other.ack(c[1]);
        other.ack(c[3]);
        other.close();
        // Settling after the close: the transport is closed.
        other.ack(c[0]);
    }
    s.await_depth(q, 3);
    s.drain(q);
    s.close();
    return out;
}

/// RMQ-PF-01/02: a consumer holds at most its prefetch; each ack lets one more through;
/// prefetch 0 takes everything.
template <class World>
trace prefetch(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto q = s.name("Q");
    s.declare_queue(q);
    for (int i = 1; i <= 6; ++i)
        s.publish("", q, "m" + std::to_string(i));
    auto c = s.consume(q, 2);
    s.await_deliveries(c, 2);
    // The broker sends no more than 2: the others stay ready.
    s.depth(q);
    s.note("consumer holds " + std::to_string(c.size()));
    REQUIRE(c.size() >= 2);
    s.ack(c[0]);
    s.await_deliveries(c, 3);
    s.depth(q);
    s.note("consumer holds " + std::to_string(c.size()));
    REQUIRE(c.size() >= 3);
    s.nack(c[1], true); // back to the queue, and at once to the consumer again (room for it)
    s.await_deliveries(c, 4);
    s.depth(q);
    s.note_deliveries(c);
    s.cancel(c);

    const auto all = s.name("all");
    s.declare_queue(all);
    for (int i = 1; i <= 4; ++i)
        s.publish("", all, "n" + std::to_string(i));
    auto unlimited = s.consume(all, 0);
    s.await_deliveries(unlimited, 4);
    s.depth(all);
    s.note_deliveries(unlimited);
    s.close();
    return out;
}

// ---- dead-lettering --------------------------------------------------------------------------

/// DLX-01/05/24/14, for classic and quorum queues: nack and reject without requeue dead-letter
/// to the DLX with the queue's dead-letter key, one x-death entry each (count, reason, queue,
/// exchange, routing-keys) and the x-first-death headers; with requeue they stay; a queue
/// without a DLX drops them.
template <class World>
trace dead_lettering_rejected(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto dlx = s.name("dlx");
    s.declare_exchange(dlx, exchange_type::direct);
    for (const auto type : {queue_type::classic, queue_type::quorum}) {
        const auto q = s.name("Q-" + type_name(type));
        const auto dlq = s.name("DLQ-" + type_name(type));
        s.declare_queue(q, dead_lettering_to(dlx, dlq, type));
        s.declare_queue(dlq);
        s.bind(dlq, dlx, dlq);
        s.publish("", q, "nacked");
        s.publish("", q, "rejected", [](letterbox::message& m) {
            m.properties.expiration = "60000"; // recorded as original-expiration (§0.3 8)
        });
        s.publish("", q, "kept");
        auto nacked = s.get(q);
        auto rejected = s.get(q);
        auto kept = s.get(q);
        REQUIRE((nacked && rejected && kept));
        s.nack(*nacked, false);
        s.reject(*kept, true);
        s.reject(*rejected, false);
        s.await_depth(dlq, 2);
        s.drain(dlq);
        s.drain(q);
    }
    // Without a DLX a nack without requeue drops the message.
    const auto plain = s.name("plain");
    s.declare_queue(plain);
    s.publish("", plain, "dropped");
    if (auto d = s.get(plain))
        s.nack(*d, false);
    s.depth(plain);
    s.close();
    return out;
}

/// DLX-28, DLX-29 and §0.3 6: a message dead-lettered back into its own queue keeps one entry
/// whose count grows; through a chain of queues each event adds an entry, and on 3.10 the older
/// entries are reversed at each event (a, b a, c a b).
template <class World>
trace x_death_history(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    // A queue whose dead letters come back to itself (default exchange, no key: its own name).
    const auto self = s.name("self");
    queue_arguments back;
    back.dead_letter_exchange = "";
    s.declare_queue(self, back);
    s.publish("", self, "cycled");
    for (int i = 0; i < 3; ++i) {
        auto d = s.get(self);
        REQUIRE(d);
        s.reject(*d, false);
        s.await_depth(self, 1);
    }
    s.drain(self);

    // A chain a -> b -> c -> d -> end through the default exchange.
    const std::vector<std::string> chain = {"a", "b", "c", "d", "end"};
    for (std::size_t i = 0; i + 1 < chain.size(); ++i)
        s.declare_queue(s.name(chain[i]),
                        dead_lettering_to("", s.name(chain[i + 1]), queue_type::classic));
    s.declare_queue(s.name("end"));
    s.publish("", s.name("a"), "travelling");
    for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
        s.await_depth(s.name(chain[i]), 1);
        auto d = s.get(s.name(chain[i]));
        REQUIRE(d);
        s.nack(*d, false);
    }
    s.await_depth(s.name("end"), 1);
    s.drain(s.name("end"));
    s.close();
    return out;
}

/// The topology lint's dead-letter traps (docs/topology-lint.md), as RabbitMQ 3.10 runs them.
/// LB-DLX-RING (§0.3 7, DLX-06): a reject -> expire -> expire ring brings the message back
/// after its first lap and drops it on the second. LB-DLX-CYCLE: in a ring of queues that only
/// expire, the message is dropped on its way back into the first. LB-DLX-MISSING: a dead letter
/// to an exchange that does not exist is dropped. LB-DLX-UNROUTABLE: one that its exchange
/// routes nowhere is dropped, while one with a bound key arrives. LB-QQ-DELIVERY-LIMIT-NEGATIVE:
/// a quorum queue with a delivery limit of -1 dead-letters a message at its first return.
template <class World>
trace lint_dead_letter_traps(World& w, const std::string& prefix) {
    using std::chrono::milliseconds;
    trace out;
    session s(w, prefix, out);
    const auto q1 = s.name("ring-q1");
    const auto q2 = s.name("ring-q2");
    const auto q3 = s.name("ring-q3");
    auto a2 = dead_lettering_to("", q3, queue_type::classic);
    a2.message_ttl = milliseconds{20};
    auto a3 = dead_lettering_to("", q1, queue_type::classic);
    a3.message_ttl = milliseconds{20};
    s.declare_queue(q1, dead_lettering_to("", q2, queue_type::classic));
    s.declare_queue(q2, a2);
    s.declare_queue(q3, a3);
    s.publish("", q1, "ring");
    for (int lap = 1; lap <= 2; ++lap) {
        s.await_depth(q1, 1);
        auto d = s.get(q1);
        REQUIRE(d);
        s.reject(*d, false);
    }
    s.world().pause(milliseconds{400}); // both expiries of lap 2 are long over
    s.depth(q1);
    s.depth(q2);
    s.depth(q3);

    const auto c1 = s.name("cycle-c1");
    const auto c2 = s.name("cycle-c2");
    auto b1 = dead_lettering_to("", c2, queue_type::classic);
    b1.message_ttl = milliseconds{20};
    auto b2 = dead_lettering_to("", c1, queue_type::classic);
    b2.message_ttl = milliseconds{20};
    s.declare_queue(c1, b1);
    s.declare_queue(c2, b2);
    s.publish("", c1, "cycle");
    s.world().pause(milliseconds{400});
    s.depth(c1);
    s.depth(c2);

    const auto lost = s.name("missing-dlx");
    s.declare_queue(lost, dead_lettering_to(s.name("no-such-exchange"), "k", queue_type::classic));
    s.publish("", lost, "to a missing exchange");
    if (auto d = s.get(lost))
        s.reject(*d, false);
    s.depth(lost);

    const auto dlx = s.name("routes-one-key");
    const auto sink = s.name("sink");
    s.declare_exchange(dlx, exchange_type::direct);
    s.declare_queue(sink);
    s.bind(sink, dlx, "bound");
    const auto unroutable = s.name("unroutable-dlx");
    const auto routable = s.name("routable-dlx");
    s.declare_queue(unroutable, dead_lettering_to(dlx, "not-bound", queue_type::classic));
    s.declare_queue(routable, dead_lettering_to(dlx, "bound", queue_type::classic));
    s.publish("", unroutable, "routed nowhere");
    s.publish("", routable, "routed");
    for (const auto& q : {unroutable, routable})
        if (auto d = s.get(q))
            s.reject(*d, false);
    s.await_depth(sink, 1);
    s.drain(sink);
    s.depth(unroutable);

    // LB-QQ-DELIVERY-LIMIT-NEGATIVE: before 4.0 a quorum queue with x-delivery-limit -1
    // dead-letters a message at its first return.
    const auto negative = s.name("limit-minus-one");
    const auto negative_dlq = s.name("limit-minus-one-dlq");
    s.declare_queue(negative_dlq);
    auto minus_one = dead_lettering_to("", negative_dlq, queue_type::quorum);
    minus_one.delivery_limit = -1;
    s.declare_queue(negative, minus_one);
    s.publish("", negative, "returned once");
    if (auto d = s.get(negative))
        s.nack(*d, true);
    s.await_depth(negative_dlq, 1);
    s.depth(negative);
    s.drain(negative_dlq);
    s.close();
    return out;
}

// ---- TTL and length limits -------------------------------------------------------------------

/// DLX-25/26, RMQ-TTL-02/03/05: a queue TTL dead-letters with reason expired and no
/// original-expiration; a per-message expiration is recorded as original-expiration and removed
/// from the dead letter; the lower of the two wins; an expired message behind a live head
/// leaves only when it reaches the head.
template <class World>
trace time_to_live(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto dlx = s.name("dlx");
    const auto dlq = s.name("DLQ");
    s.declare_exchange(dlx, exchange_type::fanout);
    s.declare_queue(dlq);
    s.bind(dlq, dlx, "");

    // Queue TTL 100 ms: three messages expire in order.
    auto ttl = dead_lettering_to(dlx, "expired-key", queue_type::classic);
    ttl.message_ttl = std::chrono::milliseconds{100};
    const auto short_lived = s.name("ttl");
    s.declare_queue(short_lived, ttl);
    for (const char* body : {"q1", "q2", "q3"})
        s.publish("", short_lived, body);
    s.await_depth(dlq, 3);
    s.depth(short_lived);
    s.drain(dlq);

    // Per-message TTL: the expiring one at the head goes, the one without stays; with a long
    // queue TTL the message's 100 ms wins.
    queue_arguments per_message = dead_lettering_to(dlx, "pm-key", queue_type::classic);
    per_message.message_ttl = std::chrono::milliseconds{60'000};
    const auto pm = s.name("per-message");
    s.declare_queue(pm, per_message);
    s.publish("", pm, "expiring", [](letterbox::message& m) { m.properties.expiration = "100"; });
    s.publish("", pm, "staying");
    s.await_depth(dlq, 1);
    s.drain(dlq);
    s.drain(pm);

    // Behind a live head, an expired message still counts and is never handed out.
    const auto behind = s.name("behind");
    s.declare_queue(behind, dead_lettering_to(dlx, "behind-key", queue_type::classic));
    s.publish("", behind, "head");
    s.publish("", behind, "short", [](letterbox::message& m) { m.properties.expiration = "50"; });
    s.publish("", behind, "tail");
    auto head = s.get(behind);
    REQUIRE(head);
    s.world().pause(std::chrono::milliseconds{300}); // well past the 50 ms
    s.ack(*head);
    s.drain(behind); // "short" expired on its way to the head: only "tail"
    s.await_depth(dlq, 1);
    s.drain(dlq);
    s.close();
    return out;
}

/// RMQ-ML-01/03, DLX-09/27, RMQ-PC-10: drop-head overflow dead-letters the oldest with reason
/// maxlen; x-max-length-bytes counts bodies; reject-publish refuses the overflowing publish
/// (publish_nacked) and stores nothing.
template <class World>
trace length_limits(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto dlx = s.name("dlx");
    const auto dlq = s.name("DLQ");
    s.declare_exchange(dlx, exchange_type::fanout);
    s.declare_queue(dlq);
    s.bind(dlq, dlx, "");

    auto head = dead_lettering_to(dlx, "maxlen-key", queue_type::classic);
    head.max_length = 2;
    const auto q = s.name("drop-head");
    s.declare_queue(q, head);
    for (const char* body : {"m1", "m2", "m3", "m4"})
        s.publish("", q, body);
    s.await_depth(dlq, 2);
    s.drain(dlq);
    s.drain(q);

    queue_arguments bytes;
    bytes.max_length_bytes = 10;
    const auto b = s.name("bytes");
    s.declare_queue(b, bytes);
    for (const char* body : {"aaaa", "bbbb", "cccc"}) // 12 bytes: the oldest goes
        s.publish("", b, body);
    s.drain(b);

    queue_arguments refuse;
    refuse.max_length = 1;
    refuse.overflow = overflow_behaviour::reject_publish;
    const auto r = s.name("reject-publish");
    s.declare_queue(r, refuse);
    s.publish("", r, "first");
    s.publish("", r, "refused");
    s.depth(r);
    s.drain(r);
    s.publish("", r, "after room");
    s.drain(r);
    s.close();
    return out;
}

// ---- confirms, returns, errors ---------------------------------------------------------------

/// RMQ-PC-06, RT-08: an unroutable mandatory publish is returned (no_route); a publish to a
/// missing exchange fails with not_found and the next publish works; a get or a depth of a
/// missing queue is not_found; a declaration that differs from the existing queue is refused.
template <class World>
trace confirms_returns_and_errors(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto x = s.name("X");
    const auto q = s.name("Q");
    s.declare_exchange(x, exchange_type::direct);
    s.declare_queue(q);
    s.bind(q, x, "routed");
    s.publish(x, "routed", "one");
    s.publish(x, "unroutable", "two");
    s.publish(s.name("missing-exchange"), "routed", "three");
    s.publish(x, "routed", "four");
    s.publish("", s.name("missing-queue"), "five");
    s.get(s.name("missing-queue"));
    s.depth(s.name("missing-queue"));
    queue_arguments different;
    different.max_length = 5;
    s.declare_queue(q, different); // 406: equivalent declarations only
    s.drain(q);
    s.close();
    return out;
}

/// RMQ-ACK-21: settling a tag the channel never gave out closes that channel (406); its
/// unacknowledged deliveries are requeued and come back marked redelivered, and the old ones can
/// no longer be settled.
template <class World>
trace unknown_delivery_tag(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto q = s.name("Q");
    s.declare_queue(q);
    for (const char* body : {"m1", "m2", "m3"})
        s.publish("", q, body);
    auto c = s.consume(q, 10);
    s.await_deliveries(c, 3);
    REQUIRE(c.size() == 3);
    auto bogus = c[2];
    bogus.delivery_tag += 1000;
    bogus.msg.body = "unknown tag";
    s.ack(bogus);
    // The consumer's channel is gone: its three deliveries go back to the queue.
    s.await_deliveries(c, 6);
    s.note_deliveries(c, 3);
    s.ack(c[0]); // from the closed channel
    for (std::size_t i = 3; i < c.size(); ++i)
        s.ack(c[i]);
    s.cancel(c);
    s.depth(q);
    s.close();
    return out;
}

// ---- basic.get's message count ---------------------------------------------------------------

/// basic.get-ok's message count comes after the expired messages at the new head were dropped
/// (rabbit_amqqueue_process:fetch), so an expired run right behind the fetched head is not
/// counted.
template <class World>
trace get_message_count_skips_an_expired_run(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    for (const auto type : {queue_type::classic, queue_type::quorum}) {
        const auto q = s.name("count-" + type_name(type));
        queue_arguments a;
        a.type = type;
        s.declare_queue(q, a);
        s.publish("", q, "head");
        for (const char* body : {"e1", "e2"})
            s.publish("", q, body, [](letterbox::message& m) { m.properties.expiration = "50"; });
        s.publish("", q, "tail");
        s.world().pause(std::chrono::milliseconds{300}); // well past the 50 ms
        auto head = s.get_counted(q);
        auto tail = s.get_counted(q);
        if (head)
            s.ack(*head);
        if (tail)
            s.ack(*tail);
        s.depth(q);
    }
    s.close();
    return out;
}

// ---- reply texts, quorum refusals, hard errors (raw channels) --------------------------------

letterbox::topology::queue raw_queue(std::string name, letterbox::field_table args = {},
                                     bool durable = false) {
    letterbox::topology::queue q;
    q.name = std::move(name);
    q.durable = durable;
    q.arguments = std::move(args);
    q.arguments.set("x-expires", std::int64_t{600'000});
    return q;
}

letterbox::topology::exchange raw_exchange(std::string name, exchange_type type,
                                           letterbox::field_table args = {}) {
    letterbox::topology::exchange x;
    x.name = std::move(name);
    x.type = type;
    x.durable = false;
    x.auto_delete = true;
    x.arguments = std::move(args);
    return x;
}

/// The full reply texts users grep for: inequivalent arguments (values quoted), an exclusive
/// queue of another connection (405), deleting a queue that is in use or not empty, deleting
/// an exchange in use, invalid queue arguments.
template <class World>
trace reply_texts(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    auto note = [&](const std::string& what, const std::string& outcome) {
        s.note(what + ": " + outcome);
    };
    const auto x = s.name("X");
    note("declare X direct", raw.exchange_declare(raw_exchange(x, exchange_type::direct)));
    note("redeclare X fanout", raw.exchange_declare(raw_exchange(x, exchange_type::fanout)));
    auto durable_x = raw_exchange(x, exchange_type::direct);
    durable_x.durable = true;
    note("redeclare X durable", raw.exchange_declare(durable_x));

    const auto q = s.name("Q");
    using letterbox::field_table;
    note("declare Q",
         raw.queue_declare(raw_queue(q, field_table{{"x-max-length", std::int64_t{1000}}})));
    note("redeclare Q max-length 2000",
         raw.queue_declare(raw_queue(q, field_table{{"x-max-length", std::int64_t{2000}}})));
    note("redeclare Q max-length int32 1000",
         raw.queue_declare(raw_queue(q, field_table{{"x-max-length", std::int32_t{1000}}})));
    note("redeclare Q without max-length", raw.queue_declare(raw_queue(q)));
    note("redeclare Q with a message ttl",
         raw.queue_declare(raw_queue(q, field_table{{"x-max-length", std::int64_t{1000}},
                                                    {"x-message-ttl", std::int64_t{5000}}})));
    note("redeclare Q max-length as text",
         raw.queue_declare(raw_queue(q, field_table{{"x-max-length", "1000"}})));
    note("redeclare Q durable",
         raw.queue_declare(raw_queue(q, field_table{{"x-max-length", std::int64_t{1000}}}, true)));
    note("redeclare Q classic",
         raw.queue_declare(raw_queue(
             q, field_table{{"x-max-length", std::int64_t{1000}}, {"x-queue-type", "classic"}})));
    note("redeclare Q quorum",
         raw.queue_declare(raw_queue(
             q, field_table{{"x-max-length", std::int64_t{1000}}, {"x-queue-type", "quorum"}})));
    note("redeclare Q with x-max-priority",
         raw.queue_declare(raw_queue(q, field_table{{"x-max-length", std::int64_t{1000}},
                                                    {"x-max-priority", std::int64_t{5}}})));
    note("redeclare Q with x-queue-mode",
         raw.queue_declare(raw_queue(
             q, field_table{{"x-max-length", std::int64_t{1000}}, {"x-queue-mode", "lazy"}})));
    note("redeclare Q with x-single-active-consumer",
         raw.queue_declare(raw_queue(q, field_table{{"x-max-length", std::int64_t{1000}},
                                                    {"x-single-active-consumer", true}})));
    for (const auto& [what, extra] : std::vector<std::pair<std::string, field_table>>{
             {"x-delivery-limit", field_table{{"x-delivery-limit", std::int64_t{3}}}},
             {"x-dead-letter-strategy", field_table{{"x-dead-letter-strategy", "at-most-once"}}},
             {"x-queue-version", field_table{{"x-queue-version", std::int64_t{1}}}},
             {"x-max-in-memory-length", field_table{{"x-max-in-memory-length", std::int64_t{5}}}},
             {"x-queue-master-locator", field_table{{"x-queue-master-locator", "min-masters"}}},
             {"x-overflow drop-head", field_table{{"x-overflow", "drop-head"}}},
             {"x-dead-letter-exchange", field_table{{"x-dead-letter-exchange", "dlx"}}},
             {"an unknown argument", field_table{{"x-letterbox-unknown", "anything"}}},
             {"x-max-in-memory-bytes", field_table{{"x-max-in-memory-bytes", std::int64_t{5}}}},
             {"x-quorum-initial-group-size",
              field_table{{"x-quorum-initial-group-size", std::int64_t{1}}}},
             {"x-max-age", field_table{{"x-max-age", "1D"}}},
             {"x-stream-max-segment-size-bytes",
              field_table{{"x-stream-max-segment-size-bytes", std::int64_t{1000}}}},
             {"x-initial-cluster-size", field_table{{"x-initial-cluster-size", std::int64_t{1}}}},
             {"x-queue-leader-locator", field_table{{"x-queue-leader-locator", "client-local"}}},
         }) {
        auto d = raw_queue(q, field_table{{"x-max-length", std::int64_t{1000}}});
        for (const auto& [k, v] : extra)
            d.arguments.set(k, v);
        note("redeclare Q with " + what, raw.queue_declare(d));
    }
    note("redeclare Q with x-expires 700000", raw.queue_declare([&] {
        auto d = raw_queue(q, field_table{{"x-max-length", std::int64_t{1000}}});
        d.arguments.set("x-expires", std::int64_t{700'000});
        return d;
    }()));
    note("redeclare Q the same",
         raw.queue_declare(raw_queue(q, field_table{{"x-max-length", std::int64_t{1000}}})));

    // Invalid arguments.
    for (const auto& [what, args] : std::vector<std::pair<std::string, field_table>>{
             {"max-length -1", field_table{{"x-max-length", std::int64_t{-1}}}},
             {"max-length text", field_table{{"x-max-length", "many"}}},
             {"max-priority 256", field_table{{"x-max-priority", std::int64_t{256}}}},
             {"max-priority -1", field_table{{"x-max-priority", std::int64_t{-1}}}},
             {"max-priority text", field_table{{"x-max-priority", "high"}}},
             {"expires 0", field_table{{"x-expires", std::int64_t{0}}}},
             {"expires -1", field_table{{"x-expires", std::int64_t{-1}}}},
             {"message-ttl -5", field_table{{"x-message-ttl", std::int64_t{-5}}}},
             {"max-length-bytes -1", field_table{{"x-max-length-bytes", std::int64_t{-1}}}},
             {"overflow explode", field_table{{"x-overflow", "explode"}}},
             {"overflow 1", field_table{{"x-overflow", std::int64_t{1}}}},
             {"dead-letter-exchange 1", field_table{{"x-dead-letter-exchange", std::int32_t{1}}}},
             {"dead-letter-routing-key without exchange",
              field_table{{"x-dead-letter-routing-key", "k"}}},
             {"dead-letter-routing-key 1",
              field_table{{"x-dead-letter-exchange", "dlx"},
                          {"x-dead-letter-routing-key", std::int32_t{1}}}},
             {"queue-type weird", field_table{{"x-queue-type", "weird"}}},
             {"queue-type 1", field_table{{"x-queue-type", std::int64_t{1}}}},
             {"delivery-limit text", field_table{{"x-delivery-limit", "three"}}},
             {"a classic queue with a delivery limit",
              field_table{{"x-delivery-limit", std::int64_t{3}}}},
             {"a classic queue with x-dead-letter-strategy",
              field_table{{"x-dead-letter-strategy", "at-most-once"}}},
             {"a classic queue with x-max-in-memory-length",
              field_table{{"x-max-in-memory-length", std::int64_t{5}}}},
             {"a classic queue with x-max-in-memory-bytes",
              field_table{{"x-max-in-memory-bytes", std::int64_t{5}}}},
             {"a classic queue with x-quorum-initial-group-size",
              field_table{{"x-quorum-initial-group-size", std::int64_t{1}}}},
             {"a classic queue with x-max-age", field_table{{"x-max-age", "1D"}}},
             {"a classic queue with x-stream-max-segment-size-bytes",
              field_table{{"x-stream-max-segment-size-bytes", std::int64_t{1000}}}},
             {"a classic queue with x-initial-cluster-size",
              field_table{{"x-initial-cluster-size", std::int64_t{1}}}},
             {"a classic queue with x-queue-leader-locator",
              field_table{{"x-queue-leader-locator", "client-local"}}},
             {"a classic queue with x-max-length -1 and a delivery limit",
              field_table{{"x-max-length", std::int64_t{-1}}, {"x-delivery-limit", "three"}}},
             {"a classic queue with x-queue-mode, x-queue-master-locator, x-queue-version and "
              "x-single-active-consumer",
              field_table{{"x-queue-mode", "lazy"},
                          {"x-queue-master-locator", "min-masters"},
                          {"x-queue-version", std::int64_t{2}},
                          {"x-single-active-consumer", true}}},
             {"a negative max-length and a delivery limit",
              field_table{{"x-max-length", std::int64_t{-1}},
                          {"x-delivery-limit", std::int64_t{3}}}},
         }) {
        auto d = raw_queue(s.name("invalid"), {});
        d.arguments = args;
        note("declare with " + what, raw.queue_declare(d));
    }

    // Exclusive queue of another connection.
    const auto excl = s.name("exclusive");
    {
        auto owner = w.make_raw();
        auto d = raw_queue(excl);
        d.exclusive = true;
        note("declare exclusive", owner.queue_declare(d));
        note("declare it from another connection", raw.queue_declare(d));
        note("passive declare it from another connection", raw.queue_declare(d, true));
        note("get from another connection", raw.get(excl).outcome);
        auto plain = raw_queue(excl);
        note("declare it non-exclusive from the owner", owner.queue_declare(plain));
        owner.close();
    }

    // Deleting what is in use or not empty.
    const auto busy = s.name("busy");
    note("declare busy", raw.queue_declare(raw_queue(busy)));
    note("publish to busy", raw.publish("", busy, {}, "one"));
    note("delete busy if empty", raw.queue_delete(busy, false, true));
    {
        auto consumer = w.make_raw();
        note("consume busy", consumer.basic_consume(busy));
        note("delete busy if unused", raw.queue_delete(busy, true, false));
        consumer.close();
    }
    const auto bound = s.name("bound");
    note("declare exchange bound",
         raw.exchange_declare(raw_exchange(bound, exchange_type::direct)));
    note("bind busy to bound", raw.queue_bind(busy, bound, "k"));
    note("delete exchange bound if unused", raw.exchange_delete(bound, true));
    note("delete busy", raw.queue_delete(busy, false, false));
    raw.close();
    s.close();
    return out;
}

/// What a 3.10 quorum queue refuses at declaration (406), and which check comes first.
template <class World>
trace quorum_declarations(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    using letterbox::field_table;
    const std::vector<std::pair<std::string, field_table>> arguments = {
        {"x-max-priority 5", field_table{{"x-max-priority", std::int64_t{5}}}},
        {"x-queue-mode lazy", field_table{{"x-queue-mode", "lazy"}}},
        {"x-queue-mode default", field_table{{"x-queue-mode", "default"}}},
        {"x-queue-master-locator", field_table{{"x-queue-master-locator", "min-masters"}}},
        {"x-queue-version 2", field_table{{"x-queue-version", std::int64_t{2}}}},
        {"x-single-active-consumer", field_table{{"x-single-active-consumer", true}}},
        {"x-max-age", field_table{{"x-max-age", "1D"}}},
        {"x-message-ttl", field_table{{"x-message-ttl", std::int64_t{1000}}}},
        {"x-overflow reject-publish-dlx", field_table{{"x-overflow", "reject-publish-dlx"}}},
        {"x-max-in-memory-length", field_table{{"x-max-in-memory-length", std::int64_t{10}}}},
        {"x-dead-letter-strategy", field_table{{"x-dead-letter-strategy", "at-most-once"}}},
        {"x-delivery-limit", field_table{{"x-delivery-limit", std::int64_t{3}}}},
        {"x-stream-max-segment-size-bytes",
         field_table{{"x-stream-max-segment-size-bytes", std::int64_t{1000}}}},
        {"x-initial-cluster-size", field_table{{"x-initial-cluster-size", std::int64_t{1}}}},
        {"x-queue-leader-locator", field_table{{"x-queue-leader-locator", "client-local"}}},
        {"x-max-in-memory-bytes", field_table{{"x-max-in-memory-bytes", std::int64_t{1000}}}},
        {"x-quorum-initial-group-size",
         field_table{{"x-quorum-initial-group-size", std::int64_t{1}}}},
        {"x-dead-letter-exchange", field_table{{"x-dead-letter-exchange", "dlx"}}},
        {"x-queue-mode and x-max-priority",
         field_table{{"x-queue-mode", "lazy"}, {"x-max-priority", std::int64_t{5}}}},
        {"x-max-priority and x-queue-mode",
         field_table{{"x-max-priority", std::int64_t{5}}, {"x-queue-mode", "lazy"}}},
        {"x-delivery-limit as text", field_table{{"x-delivery-limit", "three"}}},
        {"x-max-length -1 and x-max-priority",
         field_table{{"x-max-length", std::int64_t{-1}}, {"x-max-priority", std::int64_t{5}}}},
    };
    int n = 0;
    for (const auto& [what, args] : arguments) {
        auto d = raw_queue(s.name("qq" + std::to_string(++n)), args, true);
        d.arguments.set("x-queue-type", "quorum");
        s.note("declare quorum with " + what + ": " + raw.queue_declare(d));
    }
    // Which comes first: a refused argument or a refused property.
    auto both =
        raw_queue(s.name("qq-both"), field_table{{"x-max-priority", std::int64_t{5}}}, false);
    both.arguments.set("x-queue-type", "quorum");
    s.note("declare a non-durable quorum with x-max-priority: " + raw.queue_declare(both));
    raw.close();
    s.close();
    return out;
}

/// 540 NOT_IMPLEMENTED is a hard error: global qos on a quorum-queue consume, and
/// basic.recover(requeue=false), close the whole connection; the connection's other channels
/// go with it.
template <class World>
trace not_implemented_closes_the_connection(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    const auto q = s.name("QQ");
    auto d = raw_queue(q, letterbox::field_table{{"x-queue-type", "quorum"}}, true);
    s.note("declare " + q + ": " + raw.queue_declare(d));
    s.note("publish: " + raw.publish("", q, {}, "m1"));
    s.note("qos global 5: " + raw.basic_qos(5, true));
    s.note("consume: " + raw.basic_consume(q));
    s.note("passive declare after: " + raw.queue_declare(d, true));
    s.note("recover requeue=false: " + raw.basic_recover(false));
    s.note("passive declare after: " + raw.queue_declare(d, true));
    s.note("recover requeue=true: " + raw.basic_recover(true));
    const auto got = raw.get(q);
    s.note("get: " + got.outcome);
    if (got.msg)
        s.note("ack: " + raw.ack(got.tag));
    raw.close();
    s.close();
    return out;
}

// ---- alternate exchanges, priorities, queue expiry ---------------------------------------------

/// The `alternate-exchange` argument: what an exchange cannot route goes to its alternate
/// exchange (through a chain of them, each exchange once), is confirmed and not returned even
/// though every transport publish is mandatory; an exchange whose bindings matched something
/// does not use it, even when that led nowhere; dead letters use it too.
template <class World>
trace alternate_exchanges(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    using letterbox::field_table;
    const auto ae = s.name("AE");
    const auto ae_q = s.name("ae-q");
    s.declare_exchange(ae, exchange_type::fanout);
    s.declare_queue(ae_q);
    s.bind(ae_q, ae, "");

    const auto x = s.name("X");
    const auto x_q = s.name("x-q");
    s.declare_exchange(x, exchange_type::direct, field_table{{"alternate-exchange", ae}});
    s.declare_queue(x_q);
    s.bind(x_q, x, "k");
    s.publish(x, "k", "routed by X");
    s.publish(x, "other", "to the AE");

    // The alternate exchange is missing, or routes nowhere itself.
    const auto lost = s.name("lost");
    s.declare_exchange(lost, exchange_type::direct,
                       field_table{{"alternate-exchange", s.name("missing")}});
    s.publish(lost, "k", "missing AE");
    const auto empty_ae = s.name("empty-ae");
    const auto via_empty = s.name("via-empty");
    s.declare_exchange(empty_ae, exchange_type::direct);
    s.declare_exchange(via_empty, exchange_type::direct,
                       field_table{{"alternate-exchange", empty_ae}});
    s.publish(via_empty, "k", "AE routes nowhere");

    // A chain of two, and a loop.
    const auto c1 = s.name("c1");
    const auto c2 = s.name("c2");
    s.declare_exchange(c2, exchange_type::direct, field_table{{"alternate-exchange", ae}});
    s.declare_exchange(c1, exchange_type::topic, field_table{{"alternate-exchange", c2}});
    s.publish(c1, "nothing.matches", "two hops");
    const auto l1 = s.name("l1");
    const auto l2 = s.name("l2");
    s.declare_exchange(l1, exchange_type::direct, field_table{{"alternate-exchange", l2}});
    s.declare_exchange(l2, exchange_type::direct, field_table{{"alternate-exchange", l1}});
    s.publish(l1, "k", "loop");

    // A binding matched (to an exchange that routes nowhere): no alternate exchange.
    const auto matched = s.name("matched");
    const auto dead_end = s.name("dead-end");
    s.declare_exchange(dead_end, exchange_type::direct);
    s.declare_exchange(matched, exchange_type::direct, field_table{{"alternate-exchange", ae}});
    s.bind(dead_end, matched, "k", {}, letterbox::topology::destination_kind::exchange);
    s.publish(matched, "k", "matched a dead end");
    s.publish(matched, "j", "matched nothing");

    // A dead letter routed through an exchange with an alternate exchange.
    const auto source = s.name("source");
    s.declare_queue(source, dead_lettering_to(x, "unbound-key", queue_type::classic));
    s.publish("", source, "dead letter");
    if (auto d = s.get(source))
        s.reject(*d, false);
    s.await_depth(ae_q, 4);
    s.drain(x_q);
    s.drain(ae_q);

    // Redeclaring with another alternate exchange is refused.
    s.declare_exchange(x, exchange_type::direct, field_table{{"alternate-exchange", c2}});
    s.close();
    return out;
}

// ---- the consistent-hash exchange ----------------------------------------------------------

/// Keys published to a consistent-hash exchange: short ones (which do not spread evenly over a
/// few queues) and "1" to "24".
std::vector<std::string> consistent_hash_keys() {
    std::vector<std::string> keys = {"",      "a",     "b",     "c",       "hello",
                                     "key-1", "key-2", "key-3", "order-42"};
    for (int i = 1; i <= 24; ++i)
        keys.push_back(std::to_string(i));
    return keys;
}

/// What an `x-consistent-hash` declaration and binding refuse: both hash arguments, an
/// unsupported property, argument values that are not text; a binding key that is not an
/// integer of at least 1 (`+3` and `007` are fine). A redeclaration compares neither argument.
template <class World>
trace consistent_hash_refusals(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    using letterbox::field_table;
    auto note = [&](const std::string& what, const std::string& outcome) {
        s.note(what + ": " + outcome);
    };
    int n = 0;
    for (const auto& [what, args] : std::vector<std::pair<std::string, field_table>>{
             {"both", field_table{{"hash-header", "k"}, {"hash-property", "message_id"}}},
             {"both, the property unsupported",
              field_table{{"hash-header", "k"}, {"hash-property", "app_id"}}},
             {"property app_id", field_table{{"hash-property", "app_id"}}},
             {"property ''", field_table{{"hash-property", ""}}},
             {"header long 5", field_table{{"hash-header", std::int64_t{5}}}},
             {"property long 5", field_table{{"hash-property", std::int64_t{5}}}},
         }) {
        note("declare with " + what,
             raw.exchange_declare(raw_exchange(s.name("bad" + std::to_string(++n)),
                                               exchange_type::consistent_hash, args)));
    }
    const auto x = s.name("X");
    note("declare X with hash-header",
         raw.exchange_declare(
             raw_exchange(x, exchange_type::consistent_hash, field_table{{"hash-header", "k"}})));
    note("redeclare X with hash-property nonsense",
         raw.exchange_declare(raw_exchange(x, exchange_type::consistent_hash,
                                           field_table{{"hash-property", "nonsense"}})));
    note("redeclare X direct", raw.exchange_declare(raw_exchange(x, exchange_type::direct)));
    const auto d = s.name("D");
    note("declare D direct", raw.exchange_declare(raw_exchange(d, exchange_type::direct)));
    note("redeclare D x-consistent-hash",
         raw.exchange_declare(raw_exchange(d, exchange_type::consistent_hash)));

    const auto q = s.name("Q");
    note("declare Q", raw.queue_declare(raw_queue(q)));
    for (const char* key : {"", "1.5", "abc", " 1", "0", "-2", "+3", "007", "abc"})
        note("bind Q to X with key '" + std::string(key) + "'", raw.queue_bind(q, x, key));
    note("unbind Q from X with key 'abc'", raw.queue_unbind(q, x, "abc"));
    raw.close();
    s.close();
    return out;
}

/// Which queue each key goes to: over three queues bound with weight 1, after a fourth is
/// appended, after one of two bindings of a queue is removed (which takes all of its buckets),
/// after a queue is deleted, and with weights 2 and 1. Each message reaches exactly one queue;
/// with no binding a publish is unroutable.
template <class World>
trace consistent_hash_routing(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    const auto x = s.name("X");
    s.declare_exchange(x, exchange_type::consistent_hash);
    s.publish(x, "a", "nothing bound");
    std::vector<std::string> queues;
    for (const char* q : {"q0", "q1", "q2", "q3"}) {
        queues.push_back(s.name(q));
        s.declare_queue(queues.back());
    }
    const auto keys = consistent_hash_keys();
    int round = 0;
    auto publish_and_drain = [&](std::size_t queue_count) {
        ++round;
        for (const auto& key : keys)
            s.publish(x, key, std::to_string(round) + " k=" + key);
        for (std::size_t i = 0; i < queue_count; ++i)
            s.drain(queues[i]);
    };
    s.bind(queues[0], x, "1");
    s.bind(queues[1], x, "1");
    s.bind(queues[1], x, "2"); // a second binding adds no buckets
    s.bind(queues[2], x, "1");
    publish_and_drain(3);
    s.bind(queues[3], x, "1"); // appended: keys only move to q3
    publish_and_drain(4);
    s.note("unbind q1 key 2: " + raw.queue_unbind(queues[1], x, "2"));
    publish_and_drain(4);
    s.note("delete q3: " + raw.queue_delete(queues[3], false, false));
    publish_and_drain(3);

    const auto weighted = s.name("W");
    s.declare_exchange(weighted, exchange_type::consistent_hash);
    s.bind(queues[0], weighted, "2");
    s.bind(queues[2], weighted, "1");
    for (const auto& key : keys)
        s.publish(weighted, key, "w k=" + key);
    s.drain(queues[0]);
    s.drain(queues[2]);
    raw.close();
    s.close();
    return out;
}

/// `hash-header` hashes the header's typed value, `hash-property` the property's text; a
/// message without it goes to one and the same queue whatever its routing key.
template <class World>
trace consistent_hash_header_and_property(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    using letterbox::basic_properties;
    using letterbox::field_table;
    std::vector<std::string> queues;
    for (const char* q : {"q0", "q1", "q2"}) {
        queues.push_back(s.name(q));
        s.declare_queue(queues.back());
    }
    auto exchange = [&](const std::string& stem, field_table args) {
        const auto x = s.name(stem);
        s.declare_exchange(x, exchange_type::consistent_hash, std::move(args));
        for (const auto& q : queues)
            s.bind(q, x, "1");
        return x;
    };
    auto drain_all = [&] {
        for (const auto& q : queues)
            s.drain(q);
    };
    auto raw_publish = [&](const std::string& x, const std::string& key, basic_properties p,
                           const std::string& body) {
        s.note("raw publish " + body + ": " + raw.publish(x, key, p, body));
    };

    const auto h = exchange("H", field_table{{"hash-header", "k"}});
    const std::vector<std::pair<std::string, letterbox::field_value>> values = {
        {"text 1", "1"},
        {"text 2", "2"},
        {"text order-42", "order-42"},
        {"int32 1", std::int32_t{1}},
        {"int64 1", std::int64_t{1}},
        {"uint8 1", std::uint8_t{1}},
        {"bool true", true},
        {"double 2.5", 2.5},
        {"timestamp", letterbox::timestamp{std::chrono::seconds{1700000000}}},
        {"table", field_table{{"a", "b"}}},
        {"array", letterbox::field_array{std::int32_t{1}, "x"}},
    };
    for (const auto& [body, value] : values) {
        basic_properties p;
        p.headers = field_table{{"k", value}};
        raw_publish(h, "same-key", p, body);
    }
    for (const char* key : {"a", "b", "hello"})
        raw_publish(h, key, basic_properties{}, std::string("no headers, key ") + key);
    {
        basic_properties p;
        p.headers = field_table{{"j", "1"}};
        raw_publish(h, "c", p, "another header");
    }
    drain_all();

    const auto correlation = exchange("C", field_table{{"hash-property", "correlation_id"}});
    for (const char* id : {"c-1", "c-2", "c-3", "order-42"}) {
        basic_properties p;
        p.correlation_id = id;
        raw_publish(correlation, "same-key", p, std::string("correlation ") + id);
    }
    raw_publish(correlation, "same-key", basic_properties{}, "no correlation id");
    drain_all();

    const auto message_id = exchange("M", field_table{{"hash-property", "message_id"}});
    for (const char* id : {"m-1", "m-2", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"}) {
        basic_properties p;
        p.message_id = id;
        raw_publish(message_id, "same-key", p, std::string("message id ") + id);
    }
    raw_publish(message_id, "same-key", basic_properties{}, "no message id");
    for (int i = 0; i < 3; ++i) // letterbox ids, the same in both worlds
        s.publish(message_id, "same-key", "transport publish " + std::to_string(i));
    drain_all();

    const auto stamped = exchange("T", field_table{{"hash-property", "timestamp"}});
    for (const std::int64_t t : {0LL, 1LL, 1700000000LL, 1767225600LL}) {
        basic_properties p;
        p.timestamp = letterbox::timestamp{std::chrono::seconds{t}};
        raw_publish(stamped, "same-key", p, "timestamp " + std::to_string(t));
    }
    raw_publish(stamped, "same-key", basic_properties{}, "no timestamp");
    drain_all();
    raw.close();
    s.close();
    return out;
}

/// `x-max-priority` on a classic queue: higher priorities first, FIFO within a priority, no
/// priority counts as 0, priorities above the maximum count as the maximum; a requeued message
/// goes back to its place; drop-head drops the highest; a queue without the argument is FIFO.
template <class World>
trace classic_priorities(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto with_priority = [](std::uint8_t p) {
        return [p](letterbox::message& m) {
            m.properties.priority = p;
        };
    };
    queue_arguments a;
    a.max_priority = 5;
    const auto q = s.name("P");
    s.declare_queue(q, a);
    s.publish("", q, "none");
    s.publish("", q, "p3", with_priority(3));
    s.publish("", q, "p1", with_priority(1));
    s.publish("", q, "p5", with_priority(5));
    s.publish("", q, "p9", with_priority(9));
    s.publish("", q, "p3b", with_priority(3));
    s.publish("", q, "p0", with_priority(0));
    auto first = s.get(q);
    auto second = s.get(q);
    REQUIRE((first && second));
    s.nack(*first, true); // back before p9
    s.ack(*second);
    s.drain(q);

    queue_arguments limited = a;
    limited.max_length = 2;
    const auto l = s.name("P-max-length");
    s.declare_queue(l, limited);
    s.publish("", l, "p1", with_priority(1));
    s.publish("", l, "p5", with_priority(5));
    s.publish("", l, "p3", with_priority(3));
    s.drain(l);

    const auto fifo = s.name("fifo");
    s.declare_queue(fifo);
    s.publish("", fifo, "p1", with_priority(1));
    s.publish("", fifo, "p5", with_priority(5));
    s.drain(fifo);

    // A consumer receives by priority too, when messages wait for it.
    s.publish("", q, "c1", with_priority(1));
    s.publish("", q, "c4", with_priority(4));
    s.publish("", q, "c2", with_priority(2));
    auto c = s.consume(q, 1);
    for (std::size_t i = 0; i < 3; ++i) {
        s.await_deliveries(c, i + 1);
        if (c.size() > i)
            s.ack(c[i]);
    }
    s.note_deliveries(c);
    s.cancel(c);
    s.close();
    return out;
}

/// `x-expires` (RMQ-TTL-08): a queue unused for the period is deleted and its messages are
/// dropped, not dead-lettered. A basic.get, a declare (passive too) and a consumer are uses;
/// the period starts again after each, and after the last consumer leaves.
template <class World>
trace queue_expiry(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto dlx = s.name("dlx");
    const auto dlq = s.name("DLQ");
    s.declare_exchange(dlx, exchange_type::fanout);
    s.declare_queue(dlq);
    s.bind(dlq, dlx, "");
    auto expiring = [&](std::string stem) {
        auto a = dead_lettering_to(dlx, "expired-queue", queue_type::classic);
        a.expires = std::chrono::milliseconds{2000};
        const auto name = s.name(stem);
        s.declare_queue(name, a);
        return name;
    };
    const auto idle = expiring("idle");
    const auto fetched = expiring("fetched");
    const auto declared = expiring("declared");
    const auto consumed = expiring("consumed");
    for (const char* body : {"m1", "m2"}) {
        s.publish("", idle, body);
        s.publish("", fetched, body);
    }
    auto c = s.consume(consumed, 10);
    s.world().pause(std::chrono::milliseconds{800});
    if (auto d = s.get(fetched))
        s.ack(*d);
    s.depth(declared);
    s.world().pause(std::chrono::milliseconds{1600}); // t = 2.4 s
    for (const auto& q : {idle, fetched, declared, consumed})
        s.depth(q);
    s.cancel(c);
    s.world().pause(std::chrono::milliseconds{2500}); // t = 4.9 s
    for (const auto& q : {fetched, declared, consumed})
        s.depth(q);
    s.depth(dlq);
    s.close();
    return out;
}

// ---- single active consumer -------------------------------------------------------------------

/// `x-single-active-consumer` on a quorum queue, with three consumers on three connections: only
/// the first receives; the first is cancelled while it holds a message, and the second takes the
/// head while the first still holds its message; the second's connection closes while it holds
/// a message, which goes back to the queue and to the third. The cancel is not tried on a classic
/// queue: 3.10.8 hands a classic queue over to the next consumer only at the queue's next event,
/// and a publish then crashes the queue (rabbitmq-server#5460; docs/in-memory-transport.md §4).
template <class World>
trace single_active_consumer_failover(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    const auto q = s.name("sac");
    const letterbox::field_table args{{"x-single-active-consumer", true},
                                      {"x-queue-type", "quorum"}};
    s.declare_queue_with(q, args, true);
    for (const char* body : {"m1", "m2", "m3", "m4"})
        s.publish("", q, body);
    session first(w, prefix, out);
    session second(w, prefix, out);
    session third(w, prefix, out);
    auto c1 = first.consume(q, 1);
    auto c2 = second.consume(q, 1);
    auto c3 = third.consume(q, 1);
    auto holders = [&] {
        s.note("deliveries: first " + std::to_string(c1.size()) + ", second " +
               std::to_string(c2.size()) + ", third " + std::to_string(c3.size()));
    };
    first.await_deliveries(c1, 1);
    // A round trip on each waiting consumer's connection: a delivery sent to it before the
    // reply would have arrived by now. Three of four messages are still ready.
    second.depth(q);
    third.depth(q);
    holders();
    // The waiting consumers are not counted by a quorum queue's declare-ok.
    s.note("passive declare: " + raw.queue_declare(raw_queue(q, args, true), true));
    first.note_deliveries(c1);

    // Cancelling the active consumer: the next one takes the head, and the cancelled one keeps
    // its unacknowledged message.
    // (No passive declare from here on: a 3.10 quorum queue also counts a cancelled consumer
    // until its messages are settled, which the model does not.)
    first.cancel(c1);
    second.await_deliveries(c2, 1);
    third.depth(q);
    holders();
    second.note_deliveries(c2);
    if (c1.size() == 1)
        first.ack(c1[0]);
    s.depth(q);

    // Closing the active consumer's connection: its message goes back to the queue, to the
    // next consumer, redelivered.
    second.close();
    for (std::size_t i = 0; i < 3; ++i) {
        third.await_deliveries(c3, i + 1);
        if (c3.size() <= i)
            break;
        third.ack(c3[i]);
    }
    third.note_deliveries(c3);
    holders();
    s.depth(q);
    third.cancel(c3);
    first.close();
    third.close();
    raw.close();
    s.close();
    return out;
}

/// `x-single-active-consumer` on a classic and a quorum queue: a waiting consumer that is
/// cancelled changes nothing; when the active consumer's connection closes, the next consumer
/// becomes active and receives the closed one's unacknowledged messages, in their original order
/// and marked redelivered, before the rest.
template <class World>
trace single_active_consumer_close(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    for (const auto type : {queue_type::classic, queue_type::quorum}) {
        const bool quorum = type == queue_type::quorum;
        const auto q = s.name("sac-" + type_name(type));
        letterbox::field_table args{{"x-single-active-consumer", true}};
        if (quorum)
            args.set("x-queue-type", "quorum");
        s.declare_queue_with(q, args, quorum);
        for (const char* body : {"m1", "m2", "m3", "m4"})
            s.publish("", q, body);
        session first(w, prefix, out);
        session second(w, prefix, out);
        session third(w, prefix, out);
        auto c1 = first.consume(q, 2);
        auto c2 = second.consume(q, 1);
        auto c3 = third.consume(q, 1);
        auto holders = [&] {
            s.note("deliveries: first " + std::to_string(c1.size()) + ", second " +
                   std::to_string(c2.size()) + ", third " + std::to_string(c3.size()));
        };
        first.await_deliveries(c1, 2);
        second.depth(q);
        third.cancel(c3);
        third.depth(q);
        holders();
        s.note("passive declare: " + raw.queue_declare(raw_queue(q, args, quorum), true));
        first.note_deliveries(c1);

        first.close();
        for (std::size_t i = 0; i < 4; ++i) {
            second.await_deliveries(c2, i + 1);
            if (c2.size() <= i)
                break;
            second.ack(c2[i]);
        }
        second.note_deliveries(c2);
        holders();
        s.depth(q);
        second.cancel(c2);
        second.close();
        third.close();
    }
    raw.close();
    s.close();
    return out;
}

/// What a single-active-consumer declaration and consume refuse: a value that is not a bool,
/// an inequivalent redeclaration, an exclusive consumer, and basic.get on a quorum queue.
template <class World>
trace single_active_consumer_refusals(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    using letterbox::field_table;
    auto note = [&](const std::string& what, const std::string& outcome) {
        s.note(what + ": " + outcome);
    };
    int n = 0;
    for (const auto& [what, args] : std::vector<std::pair<std::string, field_table>>{
             {"text 'true'", field_table{{"x-single-active-consumer", "true"}}},
             {"long 1", field_table{{"x-single-active-consumer", std::int64_t{1}}}},
             {"int 0", field_table{{"x-single-active-consumer", std::int32_t{0}}}},
             {"text and an invalid queue type",
              field_table{{"x-single-active-consumer", "yes"}, {"x-queue-type", "weird"}}},
             {"text and a negative max-length",
              field_table{{"x-single-active-consumer", "yes"}, {"x-max-length", std::int64_t{-1}}}},
             {"text on a quorum queue",
              field_table{{"x-single-active-consumer", "yes"}, {"x-queue-type", "quorum"}}},
         }) {
        note("declare with " + what,
             raw.queue_declare(raw_queue(s.name("bad" + std::to_string(++n)), args, true)));
    }

    const auto on = s.name("on");
    const auto off = s.name("off");
    note("declare on",
         raw.queue_declare(raw_queue(on, field_table{{"x-single-active-consumer", true}})));
    note("redeclare on with false",
         raw.queue_declare(raw_queue(on, field_table{{"x-single-active-consumer", false}})));
    note("redeclare on without it", raw.queue_declare(raw_queue(on)));
    note("redeclare on with true",
         raw.queue_declare(raw_queue(on, field_table{{"x-single-active-consumer", true}})));
    note("declare off (false)",
         raw.queue_declare(raw_queue(off, field_table{{"x-single-active-consumer", false}})));
    note("redeclare off without it", raw.queue_declare(raw_queue(off)));

    // `false` is off: two consumers share the messages round robin.
    {
        session a(w, prefix, out);
        session b(w, prefix, out);
        auto ca = a.consume(off, 10);
        auto cb = b.consume(off, 10);
        for (const char* body : {"m1", "m2"})
            s.publish("", off, body);
        a.await_deliveries(ca, 1);
        b.await_deliveries(cb, 1);
        a.note_deliveries(ca);
        b.note_deliveries(cb);
        a.close();
        b.close();
    }

    // Consuming: an exclusive consumer is refused even when it would be the first; basic.get
    // works on a classic queue and is refused on a quorum queue.
    const auto quorum = s.name("on-quorum");
    note("declare on-quorum",
         raw.queue_declare(raw_queue(
             quorum, field_table{{"x-single-active-consumer", true}, {"x-queue-type", "quorum"}},
             true)));
    for (const auto& name : {on, quorum}) {
        s.publish("", name, "g1");
        note("exclusive consume " + name, raw.basic_consume(name, true));
        const auto got = raw.get(name);
        note("get " + name, got.outcome);
        if (got.msg)
            note("ack", raw.ack(got.tag));
        note("consume " + name, raw.basic_consume(name));
        note("exclusive consume " + name + " with a consumer", raw.basic_consume(name, true));
    }
    // The same on a quorum queue without single active consumer.
    const auto plain = s.name("plain-quorum");
    note("declare plain-quorum",
         raw.queue_declare(raw_queue(plain, field_table{{"x-queue-type", "quorum"}}, true)));
    note("exclusive consume plain-quorum", raw.basic_consume(plain, true));
    note("consume plain-quorum", raw.basic_consume(plain));
    note("exclusive consume plain-quorum with a consumer", raw.basic_consume(plain, true));
    raw.close();
    s.close();
    return out;
}

// ---- consumer timeout --------------------------------------------------------------------------

/// The consumer timeout shortened for a run: 1 s, checked every 250 ms (3.10's defaults are
/// 30 minutes and 60 s; docs/in-memory-transport.md §2.18).
const broker_settings short_consumer_timeout{.consumer_timeout = std::chrono::milliseconds{1000},
                                             .channel_tick_interval =
                                                 std::chrono::milliseconds{250}};

/// A delivery left unacknowledged past the consumer timeout: the broker closes its channel, and
/// only that one, with 406 and its text, at the first tick after the deadline (a tick of the
/// channel, which opened just before the delivery), and requeues what the channel held, marked
/// redelivered. A raw consumer shows the close; the transport's consumer consumes again on a new
/// channel and gets the message back; a get held too long closes the get channel. Both
/// transports count the two closes of theirs.
template <class World>
trace consumer_timeout(World& w, const std::string& prefix) {
    using namespace std::chrono_literals;
    trace out;
    session s(w, prefix, out);
    const auto q = s.name("held");
    s.declare_queue(q);
    auto counted = [&] {
        s.note("consumer timeouts counted: " + std::to_string(s.transport().consumer_timeouts()));
    };

    auto raw = w.make_raw();
    s.note("raw consume: " + raw.basic_consume(q)); // opens the raw channel: its ticks start
    s.publish("", q, "r1");
    const auto delivered = w.now();
    s.wait_for([&] { return raw.deliveries() == 1; });
    w.wait_for([&] { return raw.channel_outcome() != "ok"; }, 5s);
    const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(w.now() - delivered);
    s.note("raw channel: " + raw.channel_outcome());
    const bool in_window = after >= 950ms && after <= 1000ms + 250ms + 500ms;
    s.note("closed after the timeout, at most a tick later: " +
           (in_window ? std::string("yes") : "no, after " + std::to_string(after.count()) + " ms"));
    s.await_depth(q, 1);
    const auto back = raw.get(q); // on a new channel
    s.note("raw get: " + back.outcome + (back.msg ? " " + back.msg->body : std::string()) +
           " redelivered=" + (back.redelivered ? "yes" : "no"));
    if (back.msg)
        s.note("raw ack: " + raw.ack(back.tag));

    auto c = s.consume(q, 10);
    s.publish("", q, "m1");
    s.publish("", q, "m2");
    s.await_deliveries(c, 2);
    if (c.size() >= 2)
        s.ack(c[1]);
    // m1 stays unacknowledged: the consumer's channel closes, the transport consumes again on a
    // new channel, and m1 comes back.
    s.await_deliveries(c, 3);
    s.note_deliveries(c);
    counted();
    if (c.size() >= 3) {
        s.ack(c[0]); // on the closed channel
        s.ack(c[2]);
    }
    s.cancel(c);

    s.publish("", q, "g1");
    auto held = s.get(q); // opens the get channel for q; held too long
    s.wait_for([&] { return s.transport().consumer_timeouts() >= 2; });
    counted();
    if (held)
        s.ack(*held);
    if (auto again = s.get(q))
        s.ack(*again);
    s.depth(q);
    raw.close();
    s.close();
    return out;
}

// ---- foreign publishers and message ids ------------------------------------------------------

/// What a Node.js or Python producer sends, published through a raw channel (no message-id, a
/// message-id that is no UUID, an upper-case UUID, an empty header table, no header table, no
/// delivery mode, a cluster-id), consumed through the transport: the same `message` on both.
template <class World>
trace foreign_publishers(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto raw = w.make_raw();
    const auto q = s.name("foreign");
    s.declare_queue(q);
    using letterbox::basic_properties;
    std::vector<std::pair<std::string, basic_properties>> sent;
    {
        basic_properties p; // amqplib sendToQueue(q, body): nothing at all
        sent.emplace_back("bare", p);
    }
    {
        basic_properties p;
        p.message_id = "order-42";
        p.content_type = "application/json";
        p.delivery_mode = 2;
        sent.emplace_back("text id", p);
    }
    {
        basic_properties p;
        p.message_id = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"; // a UUID, not lower case
        p.headers = letterbox::field_table{};                  // empty, not absent
        sent.emplace_back("upper-case uuid, empty headers", p);
    }
    {
        basic_properties p;
        p.message_id = "6f1c2b9e-6d4e-4d7a-9a59-2f3c1e0b7a11";
        p.headers = letterbox::field_table{{"k", "v"}};
        p.type = "";
        p.delivery_mode = 1;
        p.priority = 4;
        p.cluster_id = "rabbit@old";
        p.timestamp = letterbox::timestamp{std::chrono::seconds{1767225600}};
        p.app_id = "node";
        p.correlation_id = "c-1";
        p.reply_to = "replies";
        sent.emplace_back("canonical uuid, every property", p);
    }
    for (const auto& [what, p] : sent)
        s.note("raw publish " + what + ": " + raw.publish("", q, p, what));
    auto c = s.consume(q, 10);
    s.await_deliveries(c, sent.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
        s.note("delivery " + std::to_string(i) + ": " + render_message(c[i].msg));
        s.ack(c[i]);
    }
    s.cancel(c);
    raw.close();
    s.close();
    return out;
}

/// A transport publish of a message with the nil id publishes it with a fresh id; two such
/// publishes get two ids. A raw publish without a message-id arrives with the nil id.
template <class World>
trace publish_assigns_ids(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    const auto q = s.name("ids");
    s.declare_queue(q);
    auto no_id = [](letterbox::message& m) {
        m.id = letterbox::message_id{};
    };
    s.publish("", q, "first", no_id);
    s.publish("", q, "second", no_id);
    auto raw = w.make_raw();
    s.note("raw publish: " + raw.publish("", q, {}, "raw"));
    std::vector<letterbox::message_id> ids;
    for (int i = 0; i < 3; ++i) {
        auto [ec, d] = s.template await2<std::optional<letterbox::delivery>>(
            [&](auto done) { s.transport().async_get(q, done); });
        if (ec || !d) {
            s.note("get: " + (ec ? describe(ec) : std::string("empty")));
            continue;
        }
        s.note("get " + d->msg.body + ": id is " + (d->msg.id.is_nil() ? "nil" : "not nil"));
        ids.push_back(d->msg.id);
        s.ack(*d);
    }
    s.note(std::string("the two assigned ids differ: ") +
           (ids.size() >= 2 && ids[0] != ids[1] ? "yes" : "no"));
    raw.close();
    s.close();
    return out;
}

} // namespace

TEST_CASE("differential: topic routing RMQ-RT-01 and RT-02 agree with RabbitMQ",
          "[.integration][amqp][differential]") {
    const auto model = compare("topic", LETTERBOX_DIFFERENTIAL(topic_routing));
    // Anchor: "#" (t5) receives each of the 11 keys once.
    CHECK(std::count_if(model.begin(), model.end(), [](const std::string& line) {
              return line.starts_with("get: queue=~.t5 ");
          }) == 11);
}

TEST_CASE("differential: direct, fanout, default and exchange-to-exchange routing agree with "
          "RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("direct", LETTERBOX_DIFFERENTIAL(direct_fanout_and_default_routing));
}

TEST_CASE("differential: headers routing RMQ-RT-10 agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("headers", LETTERBOX_DIFFERENTIAL(headers_routing));
}

TEST_CASE("differential: requeue order with basic.get agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("requeue-get", LETTERBOX_DIFFERENTIAL(requeue_order_with_get));
}

TEST_CASE("differential: requeue order with a consumer agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("requeue-consumer", LETTERBOX_DIFFERENTIAL(requeue_order_with_consumer));
}

TEST_CASE("differential: deliveries of a closed transport come back in order like on RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("lost-channel", LETTERBOX_DIFFERENTIAL(lost_channel_requeue_order));
}

TEST_CASE("differential: prefetch agrees with RabbitMQ", "[.integration][amqp][differential]") {
    compare("prefetch", LETTERBOX_DIFFERENTIAL(prefetch));
}

TEST_CASE("differential: dead-lettering of rejected messages and x-death agree with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("dlx-rejected", LETTERBOX_DIFFERENTIAL(dead_lettering_rejected));
}

TEST_CASE("differential: x-death counts and order over cycles and chains agree with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("x-death", LETTERBOX_DIFFERENTIAL(x_death_history));
}

TEST_CASE("differential: the dead-letter traps of the topology lint lose the message as on "
          "RabbitMQ 3.10",
          "[.integration][amqp][differential]") {
    compare("lint-traps", LETTERBOX_DIFFERENTIAL(lint_dead_letter_traps));
}

TEST_CASE("differential: queue and message TTL agree with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("ttl", LETTERBOX_DIFFERENTIAL(time_to_live));
}

TEST_CASE("differential: max-length, max-length-bytes and reject-publish agree with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("max-length", LETTERBOX_DIFFERENTIAL(length_limits));
}

TEST_CASE("differential: confirms, returns and channel errors agree with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("confirms", LETTERBOX_DIFFERENTIAL(confirms_returns_and_errors));
}

TEST_CASE("differential: an unknown delivery tag closes the channel like on RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("unknown-tag", LETTERBOX_DIFFERENTIAL(unknown_delivery_tag));
}

TEST_CASE("differential: where a requeue puts a message among ready ones agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("requeue-position", LETTERBOX_DIFFERENTIAL(requeue_position_among_ready_messages));
}

TEST_CASE("differential: basic.get's message count after an expired run agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("get-count", LETTERBOX_DIFFERENTIAL(get_message_count_skips_an_expired_run));
}

TEST_CASE("differential: reply texts of channel errors agree with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("texts", LETTERBOX_DIFFERENTIAL(reply_texts));
}

TEST_CASE("differential: what a quorum queue declaration refuses agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("quorum-args", LETTERBOX_DIFFERENTIAL(quorum_declarations));
}

TEST_CASE("differential: 540 NOT_IMPLEMENTED closes the connection like on RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("not-implemented", LETTERBOX_DIFFERENTIAL(not_implemented_closes_the_connection));
}

TEST_CASE("differential: alternate exchanges agree with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("alternate", LETTERBOX_DIFFERENTIAL(alternate_exchanges));
}

TEST_CASE("differential: what a consistent-hash exchange refuses agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("chx-refusals", LETTERBOX_DIFFERENTIAL(consistent_hash_refusals));
}

TEST_CASE("differential: the queue a consistent-hash exchange picks for each key agrees with "
          "RabbitMQ",
          "[.integration][amqp][differential]") {
    const auto model = compare("chx-routing", LETTERBOX_DIFFERENTIAL(consistent_hash_routing));
    // Anchors: each message of every round went to exactly one queue.
    CHECK(std::count_if(model.begin(), model.end(), [](const std::string& line) {
              return line.starts_with("get: ");
          }) == static_cast<std::ptrdiff_t>(5 * consistent_hash_keys().size()));
}

TEST_CASE("differential: consistent hashing on a header or a property agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("chx-header-property", LETTERBOX_DIFFERENTIAL(consistent_hash_header_and_property));
}

TEST_CASE("differential: classic queue priorities agree with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("priority", LETTERBOX_DIFFERENTIAL(classic_priorities));
}

TEST_CASE("differential: queue expiry x-expires agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("expires", LETTERBOX_DIFFERENTIAL(queue_expiry));
}

TEST_CASE("differential: single active consumer failover on a quorum queue agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    const auto model =
        compare("sac-failover", LETTERBOX_DIFFERENTIAL(single_active_consumer_failover));
    // Anchors: while the first consumer was active the others had nothing, and after its cancel
    // the second had the head while the first still held its message.
    CHECK(std::count(model.begin(), model.end(), "deliveries: first 1, second 0, third 0") == 1);
    CHECK(std::count(model.begin(), model.end(), "deliveries: first 1, second 1, third 0") == 1);
}

TEST_CASE("differential: single active consumer after a closed connection agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    const auto model = compare("sac-close", LETTERBOX_DIFFERENTIAL(single_active_consumer_close));
    // Anchor: on both queue types the second consumer received all four messages.
    CHECK(std::count(model.begin(), model.end(), "deliveries: first 2, second 4, third 0") == 2);
}

TEST_CASE("differential: what single active consumer refuses agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("sac-refusals", LETTERBOX_DIFFERENTIAL(single_active_consumer_refusals));
}

TEST_CASE("differential: the consumer timeout closes a channel and requeues its deliveries like "
          "on RabbitMQ",
          "[.integration][amqp][differential][disruptive]") {
    // It shortens the broker's consumer timeout while it runs (for every client: disruptive).
    if (!amqp_test::broker_is_controllable())
        return;
    const auto model = compare("consumer-timeout", short_consumer_timeout,
                               LETTERBOX_DIFFERENTIAL(consumer_timeout));
    // Anchors: the raw consumer's channel closed with RabbitMQ's text, the redelivery reached
    // the transport's consumer, and both closes of the transport's channels were counted.
    CHECK(std::count(model.begin(), model.end(),
                     "raw channel: channel closed: " +
                         describe(make_error_code(letterbox::errc::precondition_failed)) +
                         " PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed "
                         "out. Timeout value used: 1000 ms. This timeout value can be "
                         "configured, see consumers doc guide to learn more") == 1);
    CHECK(std::count(model.begin(), model.end(), "consumer timeouts counted: 2") == 1);
}

TEST_CASE("differential: a foreign publisher's message looks the same on both transports",
          "[.integration][amqp][differential]") {
    compare("foreign", LETTERBOX_DIFFERENTIAL(foreign_publishers));
}

TEST_CASE("differential: both transports give a message published with the nil id a fresh id",
          "[.integration][amqp][differential]") {
    compare("ids", LETTERBOX_DIFFERENTIAL(publish_assigns_ids));
}

// ---- direct reply-to (amq.rabbitmq.reply-to) --------------------------------------------------

/// A reply address as a trace shows it: the pseudo-queue's name, and `.K` for the key the
/// broker appends (it names the consuming channel and differs from run to run).
inline std::string reply_address(const std::optional<std::string>& reply_to) {
    constexpr std::string_view pseudo = "amq.rabbitmq.reply-to";
    if (!reply_to)
        return "(none)";
    if (reply_to->size() > pseudo.size() + 1 && reply_to->starts_with(pseudo) &&
        (*reply_to)[pseudo.size()] == '.')
        return std::string(pseudo) + ".K";
    return *reply_to;
}

/// Direct reply-to on raw channels: what the pseudo-queue refuses (a consumer that acks, a
/// second one, a request published on a channel without one), how the broker rewrites
/// `reply_to`, how a reply reaches the requesting channel, and what a reply to a closed
/// channel or to a made-up address does.
template <class World>
trace direct_reply_to(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto requester = w.make_raw();
    auto responder = w.make_raw();
    auto note = [&](const std::string& what, const std::string& outcome) {
        s.note(what + ": " + outcome);
    };
    const std::string pseudo = "amq.rabbitmq.reply-to";
    const auto q = s.name("requests");
    note("declare requests", responder.queue_declare(raw_queue(q)));
    note("passive declare of the pseudo-queue", requester.queue_declare(raw_queue(pseudo), true));
    note("declare the pseudo-queue", requester.queue_declare(raw_queue(pseudo)));
    note("consume with acks", requester.basic_consume(pseudo, false, false));
    letterbox::basic_properties props;
    props.reply_to = pseudo;
    props.correlation_id = "c1";
    note("request without a reply consumer", requester.publish("", q, props, "r0"));
    note("consume no-ack", requester.basic_consume(pseudo, false, true));
    note("consume no-ack again", requester.basic_consume(pseudo, false, true));
    note("consume no-ack after the refusal", requester.basic_consume(pseudo, false, true));
    note("request", requester.publish("", q, props, "r1"));
    const auto got = responder.get(q);
    note("get the request", got.outcome);
    if (!got.msg)
        return out;
    const auto address = got.msg->properties.reply_to.value_or("");
    s.note("request's reply_to: " + reply_address(got.msg->properties.reply_to));
    note("ack it", responder.ack(got.tag));
    note("passive declare of the address", responder.queue_declare(raw_queue(address), true));
    letterbox::basic_properties reply;
    reply.correlation_id = "c1";
    note("reply, mandatory", responder.publish("", address, reply, "answer", true));
    s.wait_for([&] { return !requester.received().empty(); });
    for (const auto& m : requester.received())
        s.note("requester got '" + std::string(m.body.begin(), m.body.end()) + "' from exchange '" +
               m.exchange + "', key " + reply_address(m.routing_key) + ", correlation " +
               m.properties.correlation_id.value_or("(none)"));
    note("reply to the bare pseudo-queue", responder.publish("", pseudo, reply, "bare", true));
    note("reply to a made-up address",
         responder.publish("", pseudo + ".bm9uc2Vuc2U=", reply, "made-up", true));
    requester.close();
    note("reply after the requester closed", responder.publish("", address, reply, "late", true));
    note("reply after the requester closed, not mandatory",
         responder.publish("", address, reply, "late"));
    // The 404's text names the address: written with its key masked.
    auto outcome = responder.queue_declare(raw_queue(address), true);
    if (const auto at = outcome.find(address); at != std::string::npos)
        outcome.replace(at, address.size(), reply_address(address));
    note("passive declare of the address after the close", outcome);
    responder.close();
    s.close();
    return out;
}

/// The reply queue's lifecycle: an exclusive queue is locked to its connection and goes with it;
/// an auto-delete queue goes when its last consumer does, and stays while it never had one.
template <class World>
trace exclusive_and_auto_delete(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    auto owner = w.make_raw();
    auto other = w.make_raw();
    auto note = [&](const std::string& what, const std::string& outcome) {
        s.note(what + ": " + outcome);
    };
    auto queue = [&](const std::string& stem, bool exclusive, bool auto_delete) {
        auto q = raw_queue(s.name(stem));
        q.exclusive = exclusive;
        q.auto_delete = auto_delete;
        return q;
    };
    const auto consumed = queue("consumed", false, true);
    const auto idle = queue("idle", false, true);
    const auto locked = queue("locked", true, false);
    note("declare auto-delete, consumed", owner.queue_declare(consumed));
    note("declare auto-delete, never consumed", owner.queue_declare(idle));
    note("declare exclusive", owner.queue_declare(locked));
    note("consume the auto-delete one", owner.basic_consume(consumed.name));
    note("consume the exclusive one", owner.basic_consume(locked.name));
    note("another connection sees the consumed one", other.queue_declare(consumed, true));
    note("another connection sees the exclusive one", other.queue_declare(locked, true));
    owner.close();
    // The deletions run when the broker has seen the connection go: wait for the first.
    s.wait_for([&] { return other.queue_declare(consumed, true).starts_with("channel closed"); });
    note("after the close, the consumed one", other.queue_declare(consumed, true));
    note("after the close, the never consumed one", other.queue_declare(idle, true));
    note("after the close, the exclusive one", other.queue_declare(locked, true));
    other.close();
    s.close();
    return out;
}

static_assert(letterbox::connection_watcher<letterbox::amqp::transport>);

/// letterbox's request client and a responder over `route`: a reply, a timeout, the late
/// reply dropped, and a second client falling back to a reply queue.
template <class World>
trace request_reply(World& w, const std::string& prefix, letterbox::reply_route route) {
    trace out;
    session s(w, prefix, out);
    session serving(w, prefix, out);
    const auto q = s.name("quotes");
    s.declare_queue(q);

    // The responder answers at once, except "slow", which it holds until told.
    std::optional<letterbox::delivery> held;
    letterbox::consume_options o;
    o.queue = q;
    o.no_ack = true;
    auto& t = serving.transport();
    auto reply = [&t](const letterbox::delivery& d) {
        letterbox::message r;
        r.routing_key = d.msg.properties.reply_to.value_or("");
        r.properties.correlation_id = d.msg.properties.correlation_id;
        r.body = "re: " + d.msg.body;
        t.async_publish(r, [](letterbox::error_code) {});
    };
    const auto [consumed, tag] = serving.template await2<std::string>([&](auto done) {
        t.async_consume(
            o,
            [&](letterbox::delivery d) {
                if (d.msg.body == "slow")
                    held = std::move(d);
                else
                    reply(d);
            },
            done);
    });
    s.note("responder: " + describe(consumed));

    letterbox::request_client client(s.transport(), w.clock(), {.route = route});
    s.note("start: " + describe(s.await([&](auto done) { client.async_start(done); })));
    s.note("reply_to: " + (client.reply_to().starts_with("letterbox.reply.")
                               ? std::string("letterbox.reply.<id>")
                               : client.reply_to()));
    auto ask = [&](const std::string& body, std::chrono::milliseconds timeout) {
        letterbox::message m;
        m.routing_key = q;
        m.body = body;
        const auto [ec, r] = s.template await2<letterbox::message>(
            [&](auto done) { client.async_request(m, timeout, done); });
        s.note("request '" + body + "': " + describe(ec) + (ec ? "" : ", reply '" + r.body + "'"));
    };
    ask("fast", 5s);
    ask("slow", 300ms);
    if (s.wait_for([&] { return held.has_value(); }))
        reply(*held);
    s.note(std::string("late reply counted: ") +
           (s.wait_for([&] { return client.stats().late_replies == 1; }) ? "yes" : "no"));
    ask("again", 5s);
    const auto st = client.stats();
    s.note("stats: requests " + std::to_string(st.requests) + ", replied " +
           std::to_string(st.replied) + ", timed out " + std::to_string(st.timed_out) + ", late " +
           std::to_string(st.late_replies));

    // A second client on the same transport: automatic falls back to a reply queue.
    letterbox::request_client second(s.transport(), w.clock());
    s.note("second start: " + describe(s.await([&](auto done) { second.async_start(done); })));
    s.note(std::string("second uses a reply queue: ") +
           (second.reply_to().starts_with("letterbox.reply.") ? "yes" : "no"));
    {
        letterbox::message m;
        m.routing_key = q;
        m.body = "second";
        const auto [ec, r] = s.template await2<letterbox::message>(
            [&](auto done) { second.async_request(m, 5s, done); });
        s.note("second request: " + describe(ec) + (ec ? "" : ", reply '" + r.body + "'"));
    }
    s.note("stop: " + describe(s.await([&](auto done) { client.async_stop(done); })));
    s.note("second stop: " + describe(s.await([&](auto done) { second.async_stop(done); })));
    serving.close();
    s.close();
    return out;
}

TEST_CASE("differential: exclusive and auto-delete queues go as on RabbitMQ",
          "[.integration][amqp][differential]") {
    const auto model = compare("reply-queues", LETTERBOX_DIFFERENTIAL(exclusive_and_auto_delete));
    CHECK(std::count(model.begin(), model.end(),
                     "after the close, the never consumed one: ok: 0 messages, 0 consumers") == 1);
}

TEST_CASE("differential: request/reply over direct reply-to agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    const auto model = compare("request-reply-direct", [](auto& w, const std::string& prefix) {
        return request_reply(w, prefix, letterbox::reply_route::direct_reply_to);
    });
    CHECK(std::count(model.begin(), model.end(), "request 'fast': ok, reply 're: fast'") == 1);
    CHECK(std::count(model.begin(), model.end(), "late reply counted: yes") == 1);
}

TEST_CASE("differential: request/reply over a reply queue agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    const auto model = compare("request-reply-queue", [](auto& w, const std::string& prefix) {
        return request_reply(w, prefix, letterbox::reply_route::reply_queue);
    });
    CHECK(std::count(model.begin(), model.end(), "request 'fast': ok, reply 're: fast'") == 1);
}

TEST_CASE("differential: direct reply-to agrees with RabbitMQ",
          "[.integration][amqp][differential]") {
    compare("direct-reply-to", LETTERBOX_DIFFERENTIAL(direct_reply_to));
}

#undef LETTERBOX_DIFFERENTIAL

} // namespace integration_amqp_differential
