// SPDX-License-Identifier: BSL-1.0
// Differential tests: each scenario runs on the in-memory RabbitMQ model and on a real RabbitMQ
// (the one LETTERBOX_AMQP_URL names), through the operations of `letterbox::queue_reader` that
// both transports have, and the two observation traces must be equal (differential_world.hpp
// says what a trace keeps and what it leaves out). The scenarios follow the model's own scenario
// tests (tests/unit/transport/in_memory/; ids from research/reliability-anchors.md part (a)):
// routing, requeue order, prefetch, dead-lettering with x-death, TTL, max-length, confirms and
// returns, and a channel closed by an unknown delivery tag. A difference means the model is
// wrong, the amqp transport is wrong, or the broker version differs (a `broker_profile` field).
//
// Every case is hidden ([.integration]) and runs in `make test` with the broker it starts.

// Named here (not only in differential_world.hpp): tests/CMakeLists.txt builds a source only
// with the components its own includes name.
#include <letterbox/amqp/transport.hpp>

#include "differential_world.hpp"

#include <letterbox/headers.hpp>
#include <letterbox/topology/exchange.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

static_assert(letterbox::queue_reader<letterbox::in_memory_transport>);
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
/// queue puts them back at their original positions, a quorum queue on 3.10 at the back.
template <class World>
trace requeue_order_with_get(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    for (const auto type : {queue_type::classic, queue_type::quorum}) {
        const auto q = s.name("Q-" + type_name(type));
        queue_arguments a;
        a.type = type;
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

/// RMQ-ACK-13 and ACK-25: a consumer's nacked and rejected deliveries come back to it marked
/// redelivered, in the order they were returned.
template <class World>
trace requeue_order_with_consumer(World& w, const std::string& prefix) {
    trace out;
    session s(w, prefix, out);
    for (const auto type : {queue_type::classic, queue_type::quorum}) {
        const auto q = s.name("C-" + type_name(type));
        queue_arguments a;
        a.type = type;
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

#undef LETTERBOX_DIFFERENTIAL
