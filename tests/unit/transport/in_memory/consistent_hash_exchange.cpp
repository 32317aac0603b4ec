// SPDX-License-Identifier: BSL-1.0
// The consistent-hash exchange (`x-consistent-hash`) in the RabbitMQ model: the port of
// erlang:phash2, OTP rand's exs1024 and the plugin's jump hash, checked against values that
// Erlang/OTP 25.2.3 computed (Debian 12's, which the test broker runs on); then declarations,
// binding weights, routing and the bucket map. The texts and the queue of each key were also
// compared with a real RabbitMQ 3.10.8 by tests/integration/amqp_differential.cpp
// (consistent_hash_*); docs/in-memory-transport.md §2.17.

#include <letterbox/transport/in_memory/broker.hpp>

#include "scenario_fixture.hpp"

#include <letterbox/topology/consistent_hash_arguments.hpp>
#include <letterbox/transport/in_memory/detail/erlang_hash.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace unit_transport_in_memory_consistent_hash_exchange {

using namespace broker_scenarios;
using namespace std::string_view_literals;
using letterbox::field_table;
using letterbox::field_value;
using letterbox::in_memory::detail::exs1024;
using letterbox::in_memory::detail::jump_consistent_hash;
using letterbox::in_memory::detail::term_hash;

namespace {

// ---- golden vectors, from Erlang/OTP 25.2.3 --------------------------------------------------

// erlang:phash2(Binary).
constexpr std::array<std::pair<std::string_view, std::uint32_t>, 9> phash2_of_binaries = {{
    {""sv, 13708901},
    {"a"sv, 112802447},
    {"hello"sv, 47480723},
    {"0123456789a"sv, 73708536}, // 11, 12, 13 and 25 bytes: the tail of the 12-byte blocks
    {"0123456789ab"sv, 115360506},
    {"0123456789abc"sv, 67923675},
    {"0123456789abcdefghijklmno"sv, 116510887},
    {"\xff\x00\x80\x07"sv, 115533407},
    {"1700000000"sv, 71065017},
}};

// erlang:phash2({Type, Value}) for header values as RabbitMQ holds them.
struct typed_vector {
    const char* what;
    field_value value;
    std::uint32_t phash2;
};

std::vector<typed_vector> phash2_of_header_values() {
    using letterbox::byte_array;
    using letterbox::decimal;
    using letterbox::field_array;
    using letterbox::timestamp;
    constexpr std::int64_t two_27 = std::int64_t{1} << 27;
    return {
        {"{longstr,<<\"1\">>}", "1", 101410271},
        {"{longstr,<<>>}", "", 116351706},
        {"{signedint,1}", std::int32_t{1}, 71654985},
        {"{long,1}", std::int64_t{1}, 126723940},
        {"{long,0}", std::int64_t{0}, 132219589},
        {"{long,-1}", std::int64_t{-1}, 45337174},
        {"{long,2^27-1}", two_27 - 1, 33099472},
        {"{long,2^27}", two_27, 117666136},
        {"{long,-2^27}", -two_27, 13500176},
        {"{long,-2^27-1}", -two_27 - 1, 132651809},
        {"{long,-2^40}", -(std::int64_t{1} << 40), 32506873},
        {"{long,2^60}", std::int64_t{1} << 60, 106028369},
        {"{long,2^63-1}", std::numeric_limits<std::int64_t>::max(), 120433834},
        {"{long,-2^63}", std::numeric_limits<std::int64_t>::min(), 112631110},
        {"{timestamp,1700000000}", timestamp{std::chrono::seconds{1700000000}}, 59280699},
        {"{bool,true}", true, 32030443},
        {"{void,undefined}", field_value{}, 27077197},
        {"{double,2.5}", 2.5, 126418831},
        {"{double,-0.0}", -0.0, 28702447},
        {"{double,-1.0e300}", -1.0e300, 119614630},
        {"{float,1.5}", 1.5F, 89550739},
        {"{unsignedbyte,7}", std::uint8_t{7}, 32852266},
        {"{byte,-7}", std::int8_t{-7}, 88582224},
        {"{binary,<<1,2>>}", byte_array{std::byte{1}, std::byte{2}}, 115591744},
        {"{decimal,{2,4294967295}}", decimal{2, -1}, 66114998},
        {"{table,[]}", field_table{}, 80606520},
        {"{table,[{<<\"k\">>,longstr,<<\"v\">>},{<<\"n\">>,signedint,7}]}",
         field_table{{"k", "v"}, {"n", std::int32_t{7}}}, 7059517},
        {"{array,[{long,1},{longstr,<<\"x\">>},{array,[{bool,true}]}]}",
         field_array{std::int64_t{1}, "x", field_array{true}}, 116409491},
    };
}

// The bucket jump_consistent_hash(Key, N) picks, for N in `bucket_counts`.
constexpr std::array<std::uint64_t, 8> bucket_counts = {2,  3,   4,         5,
                                                        10, 100, 1'000'000, std::uint64_t{1} << 40};
struct jump_vector {
    std::string_view key;
    std::array<std::uint64_t, 8> bucket;
};
constexpr std::array<jump_vector, 15> jumps_of_keys = {{
    {""sv, {0, 0, 0, 0, 9, 45, 792163, 584470236581}},
    {"a"sv, {1, 1, 1, 1, 6, 47, 322185, 1050493375996}},
    {"b"sv, {1, 1, 1, 1, 1, 13, 182040, 535657594905}},
    {"c"sv, {1, 1, 1, 4, 4, 11, 349074, 546036366909}},
    {"hello"sv, {1, 1, 3, 3, 9, 43, 840992, 763346614500}},
    {"key-1"sv, {1, 1, 1, 1, 1, 64, 706614, 726171380351}},
    {"key-2"sv, {1, 1, 1, 1, 7, 22, 171232, 990670635780}},
    {"key-3"sv, {1, 1, 1, 1, 6, 78, 995081, 820058200713}},
    {"order-42"sv, {1, 1, 1, 1, 8, 31, 884880, 440046934007}},
    {"1"sv, {1, 2, 2, 2, 8, 76, 853597, 665499022924}},
    {"2"sv, {0, 2, 2, 2, 5, 12, 938611, 285712726065}},
    {"3"sv, {0, 2, 2, 2, 2, 87, 22061, 165015892244}},
    {"1700000000"sv, {1, 1, 1, 1, 5, 45, 310542, 356900455646}},
    {"c-1"sv, {0, 0, 0, 0, 5, 59, 669524, 769864519932}},
    {"c-2"sv, {0, 2, 2, 2, 9, 41, 275922, 482236626273}},
}};

/// The queue each of these keys goes to over three buckets, one per queue q0, q1, q2 (from
/// `jumps_of_keys`, N = 3): a handful of short keys does not spread evenly.
const std::vector<std::pair<std::string, int>> keys_over_three = {
    {"", 0},      {"a", 1},     {"b", 1},        {"c", 1}, {"hello", 1}, {"key-1", 1},
    {"key-2", 1}, {"key-3", 1}, {"order-42", 1}, {"1", 2}, {"2", 2},     {"3", 2},
};

std::uint32_t phash2_of(std::string_view bytes) {
    term_hash h;
    h.binary(bytes);
    return h.phash2();
}

// ---- broker helpers --------------------------------------------------------------------------

topology::exchange chx(std::string name, field_table args = {}) {
    topology::exchange x;
    x.name = std::move(name);
    x.type = topology::exchange_type::consistent_hash;
    x.arguments = std::move(args);
    return x;
}

/// What a declaration on a fresh channel gave: "ok" or the close reason's text.
std::string declare_text(broker_fixture& fx, const topology::exchange& x) {
    auto ch = fx.open_channel();
    const auto ec = ch.exchange_declare(x);
    return ec ? ch.close_reason().text : "ok";
}

std::string bind_text(broker_fixture& fx, const std::string& queue, const std::string& x,
                      const std::string& key) {
    auto ch = fx.open_channel();
    const auto ec = ch.queue_bind(queue, x, key);
    return ec ? ch.close_reason().text : "ok";
}

/// Publishes each key (as routing key and body) to `x`, then says which of `queues` each went
/// to, by index; -1 for none.
std::vector<std::pair<std::string, int>> route_keys(broker_fixture& fx, const std::string& x,
                                                    const std::vector<std::string>& queues,
                                                    const std::vector<std::string>& keys) {
    for (const auto& k : keys)
        REQUIRE_FALSE(fx.ch.basic_publish(make_message(x, k, k)));
    std::vector<std::pair<std::string, int>> out;
    for (const auto& k : keys)
        out.emplace_back(k, -1);
    for (std::size_t i = 0; i < queues.size(); ++i)
        for (const auto& body : fx.drain(queues[i]))
            for (auto& [k, q] : out)
                if (k == body) {
                    CHECK(q == -1); // exactly one queue per message
                    q = static_cast<int>(i);
                }
    return out;
}

std::vector<std::string> keys_of(const std::vector<std::pair<std::string, int>>& expected) {
    std::vector<std::string> out;
    for (const auto& e : expected)
        out.push_back(e.first);
    return out;
}

} // namespace

TEST_CASE("the ports of phash2, exs1024 and jump hash give what Erlang/OTP 25 computes",
          "[transport][in_memory][consistent_hash]") {
    for (const auto& [bytes, want] : phash2_of_binaries) {
        INFO("binary of " << bytes.size() << " bytes");
        CHECK(phash2_of(bytes) == want);
    }
    for (const auto& [name, want] : {std::pair{"undefined", 45914356U}, {"true", 506293U}}) {
        term_hash h;
        h.atom(name);
        CHECK(h.phash2() == want);
    }
    for (const auto& v : phash2_of_header_values()) {
        INFO(v.what);
        term_hash h;
        letterbox::in_memory::detail::hash_header_value(h, v.value);
        CHECK(h.phash2() == v.phash2);
    }

    // rand:seed_s(exs1024, {5, 5, 5}): the state's first and last words, then 20 draws of
    // rand:uniform_s as the bits of the doubles.
    exs1024 g(5);
    CHECK(g.word(0) == 17873131353354250451ULL);
    CHECK(g.word(7) == 6294966190838202859ULL);
    CHECK(g.word(15) == 2294903908738986871ULL);
    constexpr std::array<std::uint64_t, 20> draws = {
        4600020632248023258, 4604218229866387002, 4597034157637349647, 4605317790462675456,
        4605031877554038531, 4603704726675175887, 4602906532830057007, 4581756248542184147,
        4594743424209928846, 4605734172182427626, 4594147534707235297, 4603102297162403560,
        4603435605513830273, 4592906915564865752, 4602134083463354772, 4604434112822581498,
        4600653994122964676, 4604997944148621766, 4601592579195280992, 4595225639996459938};
    for (std::size_t i = 0; i < draws.size(); ++i) {
        INFO("draw " << i);
        CHECK(std::bit_cast<std::uint64_t>(g.uniform()) == draws[i]);
    }

    for (const auto& [key, buckets] : jumps_of_keys) {
        INFO("key '" << key << "'");
        for (std::size_t i = 0; i < bucket_counts.size(); ++i) {
            INFO(bucket_counts[i] << " buckets");
            CHECK(jump_consistent_hash(phash2_of(key), bucket_counts[i]) == buckets[i]);
        }
        CHECK(jump_consistent_hash(phash2_of(key), 1) == 0);
    }
    term_hash undefined;
    undefined.atom("undefined");
    CHECK(jump_consistent_hash(undefined.phash2(), 3) == 1);
    CHECK(jump_consistent_hash(undefined.phash2(), 100) == 39);
}

TEST_CASE("a consistent-hash binding key is a weight of at least 1: anything else closes the "
          "channel with 406",
          "[transport][in_memory][consistent_hash]") {
    broker_fixture fx;
    REQUIRE(declare_text(fx, chx("X")) == "ok");
    fx.declare_queue("Q");
    const std::string not_integer = "PRECONDITION_FAILED - The binding key must be an integer: ";
    CHECK(bind_text(fx, "Q", "X", "") == not_integer + "<<>>");
    CHECK(bind_text(fx, "Q", "X", "1.5") == not_integer + "<<\"1.5\">>");
    CHECK(bind_text(fx, "Q", "X", "abc") == not_integer + "<<\"abc\">>");
    CHECK(bind_text(fx, "Q", "X", " 1") == not_integer + "<<\" 1\">>");
    CHECK(bind_text(fx, "Q", "X", "a\"b\n") == not_integer + "<<\"a\\\"b\\n\">>");
    CHECK(bind_text(fx, "Q", "X", std::string("\x01\x7f", 2)) == not_integer + "<<1,127>>");
    CHECK(bind_text(fx, "Q", "X", "0") ==
          "PRECONDITION_FAILED - The binding key must be greater than 0");
    CHECK(bind_text(fx, "Q", "X", "-2") ==
          "PRECONDITION_FAILED - The binding key must be greater than 0");
    CHECK(fx.broker.bindings("X").empty());
    CHECK(bind_text(fx, "Q", "X", "+3") == "ok");
    CHECK(bind_text(fx, "Q", "X", "007") == "ok");
    // The weight is checked before whether the binding exists, and an unbind checks nothing.
    CHECK(bind_text(fx, "Q", "X", "zero") == not_integer + "<<\"zero\">>");
    auto ch = fx.open_channel();
    CHECK_FALSE(ch.queue_unbind("Q", "X", "zero"));
    CHECK(fx.broker.bindings("X").size() == 2);
}

TEST_CASE("hash-header and hash-property: only message_id, correlation_id and timestamp, never "
          "both, and a redeclaration compares neither",
          "[transport][in_memory][consistent_hash]") {
    using letterbox::topology::consistent_hash_arguments;
    using letterbox::topology::hashed_property;
    broker_fixture fx;
    CHECK(declare_text(fx, chx("H", consistent_hash_arguments{.hash_header = "k"}.to_table())) ==
          "ok");
    for (auto p :
         {hashed_property::message_id, hashed_property::correlation_id, hashed_property::timestamp})
        CHECK(declare_text(fx, chx("P" + std::string(to_string(p)),
                                   consistent_hash_arguments{.hash_property = p}.to_table())) ==
              "ok");
    CHECK(declare_text(fx, chx("U", field_table{{"hash-property", "app_id"}})) ==
          "PRECONDITION_FAILED - Unsupported property: app_id");
    CHECK(declare_text(fx,
                       chx("B", field_table{{"hash-header", "k"}, {"hash-property", "app_id"}})) ==
          "PRECONDITION_FAILED - hash-header and hash-property are mutually exclusive");
    CHECK_FALSE(fx.broker.has_exchange("U"));
    CHECK_FALSE(fx.broker.has_exchange("B"));
    CHECK(declare_text(fx, chx("H", field_table{{"hash-property", "nonsense"}})) == "ok");
    CHECK(declare_text(fx, chx("H")) == "ok");
    CHECK(declare_text(fx, topology::exchange{.name = "H"}) ==
          "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'H' in vhost '/': received "
          "'direct' but current is ''x-consistent-hash''");
    // A value that is not text crashes RabbitMQ's channel: the connection closes with 541.
    auto conn = fx.broker.connect("crashing");
    auto ch = conn.open_channel();
    CHECK(ch.exchange_declare(chx("L", field_table{{"hash-header", std::int64_t{5}}})) ==
          errc::internal_error);
    CHECK_FALSE(conn.is_open());
    CHECK(conn.close_reason().text == "INTERNAL_ERROR");
    CHECK_FALSE(fx.broker.has_exchange("L"));
}

TEST_CASE("a consistent-hash exchange sends each key to the one queue RabbitMQ picks, its "
          "weight counting as buckets",
          "[transport][in_memory][consistent_hash]") {
    broker_fixture fx;
    REQUIRE(declare_text(fx, chx("X")) == "ok");
    const std::vector<std::string> queues = {"q0", "q1", "q2"};
    for (const auto& q : queues) {
        fx.declare_queue(q);
        fx.bind(q, "X", "1");
    }
    CHECK(route_keys(fx, "X", queues, keys_of(keys_over_three)) == keys_over_three);

    // Weights: w2 holds buckets 0 and 1, w1 bucket 2.
    REQUIRE(declare_text(fx, chx("W")) == "ok");
    fx.bind("q0", "W", "2");
    fx.bind("q1", "W", "1");
    auto weighted = keys_over_three;
    for (auto& [k, q] : weighted)
        q = q == 2 ? 1 : 0;
    CHECK(route_keys(fx, "W", queues, keys_of(weighted)) == weighted);

    // Over many keys, each queue's share follows its weight (about 2/3 and 1/3 here).
    int first = 0;
    for (int i = 0; i < 3000; ++i)
        REQUIRE_FALSE(fx.ch.basic_publish(make_message("W", "k" + std::to_string(i), "m")));
    first = static_cast<int>(fx.ready("q0"));
    CHECK(first + fx.ready("q1") == 3000);
    CHECK(first > 1900);
    CHECK(first < 2100);
}

TEST_CASE("a hash-header or hash-property exchange hashes the typed header or the property, "
          "and sends every message lacking it to one queue",
          "[transport][in_memory][consistent_hash]") {
    using letterbox::topology::consistent_hash_arguments;
    using letterbox::topology::hashed_property;
    broker_fixture fx;
    const std::vector<std::string> queues = {"q0", "q1", "q2"};
    for (const auto& q : queues)
        fx.declare_queue(q);
    REQUIRE(declare_text(fx, chx("H", consistent_hash_arguments{.hash_header = "k"}.to_table())) ==
            "ok");
    REQUIRE(declare_text(fx, chx("P", consistent_hash_arguments{.hash_property =
                                                                    hashed_property::correlation_id}
                                          .to_table())) == "ok");
    REQUIRE(declare_text(
                fx, chx("T", consistent_hash_arguments{.hash_property = hashed_property::timestamp}
                                 .to_table())) == "ok");
    for (const char* x : {"H", "P", "T"})
        for (const auto& q : queues)
            fx.bind(q, x, "1");
    auto publish = [&](const std::string& x, const std::string& body, auto tweak) {
        auto m = make_message(x, "hello", body);
        tweak(m);
        REQUIRE_FALSE(fx.ch.basic_publish(std::move(m)));
    };
    auto with_header = [](field_value v) {
        return [v](letterbox::message& m) {
            m.headers.set("k", v);
        };
    };
    // Over three buckets: {longstr,<<"1">>} and {long,1} take bucket 2, {signedint,1} bucket 0;
    // the atom undefined (no such header) bucket 1, whatever the routing key.
    publish("H", "text 1", with_header("1"));
    publish("H", "long 1", with_header(std::int64_t{1}));
    publish("H", "int 1", with_header(std::int32_t{1}));
    publish("H", "missing", [](letterbox::message&) {});
    publish("H", "other header", [](letterbox::message& m) { m.headers.set("j", "1"); });
    CHECK(fx.drain("q0") == std::vector<std::string>{"int 1"});
    CHECK(fx.drain("q1") == std::vector<std::string>{"missing", "other header"});
    CHECK(fx.drain("q2") == std::vector<std::string>{"text 1", "long 1"});

    // A property is hashed as text: "c-1" takes bucket 0, "c-2" bucket 2, and the timestamp
    // 1700000000 (as "1700000000") bucket 1, as does a message without the property.
    publish("P", "c-1", [](letterbox::message& m) { m.properties.correlation_id = "c-1"; });
    publish("P", "c-2", [](letterbox::message& m) { m.properties.correlation_id = "c-2"; });
    publish("P", "none", [](letterbox::message&) {});
    publish("T", "stamped", [](letterbox::message& m) {
        m.properties.timestamp = letterbox::timestamp{std::chrono::seconds{1700000000}};
    });
    CHECK(fx.drain("q0") == std::vector<std::string>{"c-1"});
    CHECK(fx.drain("q1") == std::vector<std::string>{"none", "stamped"});
    CHECK(fx.drain("q2") == std::vector<std::string>{"c-2"});
}

TEST_CASE("consistent-hash buckets: a second binding adds none, any unbind or a queue's "
          "deletion removes the queue's buckets, no bucket is unroutable",
          "[transport][in_memory][consistent_hash]") {
    broker_fixture fx;
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    REQUIRE(declare_text(fx, chx("X")) == "ok");
    const std::vector<std::string> queues = {"q0", "q1", "q2", "q3"};
    for (const auto& q : queues)
        fx.declare_queue(q);
    // Nothing bound: a mandatory publish comes back with 312 NO_ROUTE.
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "a", "m"), true));
    REQUIRE(log.returns.size() == 1);
    CHECK(log.returns[0].reply_code == 312);

    // q0 takes bucket 0, q1 buckets 1 and 2 (its second binding adds none), q2 bucket 3.
    fx.bind("q0", "X", "1");
    fx.bind("q1", "X", "2");
    fx.bind("q1", "X", "5");
    fx.bind("q2", "X", "1");
    const std::vector<std::string> keys = {"", "a", "c", "hello", "1", "2"};
    auto over_four = route_keys(fx, "X", queues, keys);
    CHECK(over_four == std::vector<std::pair<std::string, int>>{
                           {"", 0}, {"a", 1}, {"c", 1}, {"hello", 2}, {"1", 1}, {"2", 1}});
    // Appending q3 only takes keys to q3 (5 buckets: "c" moves to bucket 4).
    fx.bind("q3", "X", "1");
    CHECK(route_keys(fx, "X", queues, keys) ==
          std::vector<std::pair<std::string, int>>{
              {"", 0}, {"a", 1}, {"c", 3}, {"hello", 2}, {"1", 1}, {"2", 1}});

    // Unbinding either of q1's bindings removes both its buckets: q2 and q3 move down to 1 and
    // 2, and q1 gets nothing although one binding stays.
    REQUIRE_FALSE(fx.ch.queue_unbind("q1", "X", "5"));
    CHECK(fx.broker.bindings("X").size() == 4);
    CHECK(route_keys(fx, "X", queues, keys) ==
          std::vector<std::pair<std::string, int>>{
              {"", 0}, {"a", 2}, {"c", 2}, {"hello", 2}, {"1", 3}, {"2", 3}});
    // Deleting a queue removes its buckets too.
    std::error_code ec;
    fx.ch.queue_delete("q3", ec);
    REQUIRE_FALSE(ec);
    CHECK(route_keys(fx, "X", {"q0", "q1", "q2"}, keys) ==
          std::vector<std::pair<std::string, int>>{
              {"", 0}, {"a", 2}, {"c", 2}, {"hello", 2}, {"1", 2}, {"2", 0}});
}

TEST_CASE("after a broker restart the buckets are rebuilt from the bindings in sorted order",
          "[transport][in_memory][consistent_hash]") {
    broker_fixture fx;
    auto x = chx("X");
    x.durable = true;
    REQUIRE(declare_text(fx, x) == "ok");
    const std::vector<std::string> queues = {"q0", "q1", "q2"};
    for (const auto& q : queues)
        fx.declare_queue(q);
    // Made in this order with keys "3", "2", "1"; sorted by key, q2 comes first after a restart.
    fx.bind("q0", "X", "3");
    fx.bind("q1", "X", "2");
    fx.bind("q2", "X", "1");
    const std::vector<std::string> keys = {"", "a", "hello", "key-1"};
    // Six buckets: 0-2 q0, 3-4 q1, 5 q2.
    const auto before = route_keys(fx, "X", queues, keys);
    fx.broker.restart();
    fx.conn = fx.broker.connect("after restart");
    fx.ch = fx.conn.open_channel();
    // Now 0 q2, 1-2 q1, 3-5 q0.
    const auto after = route_keys(fx, "X", queues, keys);
    CHECK(before != after);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        INFO("key '" << keys[i] << "'");
        term_hash h;
        h.binary(keys[i]);
        const auto bucket = jump_consistent_hash(h.phash2(), 6);
        CHECK(before[i].second == (bucket < 3 ? 0 : bucket < 5 ? 1 : 2));
        CHECK(after[i].second == (bucket < 1 ? 2 : bucket < 3 ? 1 : 0));
    }
}

} // namespace unit_transport_in_memory_consistent_hash_exchange
