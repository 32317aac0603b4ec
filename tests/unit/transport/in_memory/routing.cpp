// SPDX-License-Identifier: BSL-1.0
// Routing scenarios of the RabbitMQ model (research/reliability-anchors.md A1, §0.3 11-13).

#include <letterbox/transport/in_memory/broker.hpp>

#include "scenario_fixture.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace unit_transport_in_memory_routing {

using namespace broker_scenarios;

namespace {

using queue_set = std::set<std::string>;

queue_set set_of(std::initializer_list<const char*> names) {
    queue_set s;
    for (const char* n : names)
        s.insert(n);
    return s;
}

/// Publishes `key` to `exchange` and returns the queues (among `queues`) that received a copy;
/// fails if one received more than one. Empties those queues again.
queue_set route(broker_fixture& fx, const std::string& exchange, const std::string& key,
                const std::vector<std::string>& queues) {
    REQUIRE_FALSE(fx.ch.basic_publish(make_message(exchange, key, "k=" + key)));
    queue_set hit;
    for (const auto& q : queues) {
        const auto got = fx.drain(q);
        INFO("queue " << q << " key '" << key << "'");
        REQUIRE(got.size() <= 1);
        if (!got.empty()) {
            CHECK(got.front() == "k=" + key);
            hit.insert(q);
        }
    }
    return hit;
}

// RMQ-RT-01: queues t1..t27 (no t24) and their binding keys, verbatim from routing_SUITE `topic`.
const std::vector<std::pair<std::string, std::string>> rt01_bindings = {
    {"t1", "a.b.c"},
    {"t2", "a.*.c"},
    {"t3", "a.#.b"},
    {"t4", "a.b.b.c"},
    {"t5", "#"},
    {"t6", "#.#"},
    {"t7", "#.b"},
    {"t8", "*.*"},
    {"t9", "a.*"},
    {"t10", "*.b.c"},
    {"t11", "a.#"},
    {"t12", "a.#.#"},
    {"t13", "b.b.c"},
    {"t14", "a.b.b"},
    {"t15", "a.b"},
    {"t16", "b.c"},
    {"t17", ""},
    {"t18", "*.*.*"},
    {"t19", "vodka.martini"},
    {"t20", "a.b.c"},
    {"t21", "*.#"},
    {"t22", "#.*.#"},
    {"t23", "*.#.#"},
    {"t25", "*"},
    {"t26", "#.b.#"},
};

std::vector<std::string> rt01_queues() {
    std::vector<std::string> qs;
    for (const auto& [q, k] : rt01_bindings)
        qs.push_back(q);
    qs.push_back("t27");
    return qs;
}

void rt01_setup(broker_fixture& fx) {
    fx.declare_exchange("X", topology::exchange_type::topic);
    for (const auto& q : rt01_queues())
        fx.declare_queue(q);
    for (const auto& [q, k] : rt01_bindings)
        fx.bind(q, "X", k);
    fx.bind("t27", "X", "args-test", letterbox::field_table{{"foo", "bar"}});
    fx.bind("t27", "X", "args-test", letterbox::field_table{{"foo", "baz"}});
}

void rt01_check(broker_fixture& fx, const std::map<std::string, queue_set>& expected) {
    const auto queues = rt01_queues();
    for (const auto& [key, want] : expected) {
        INFO("routing key '" << key << "'");
        CHECK(route(fx, "X", key, queues) == want);
    }
}

} // namespace

TEST_CASE("topic routing table RMQ-RT-01 phase 1 routes each key to exactly the expected queues",
          "[transport][in_memory]") {
    broker_fixture fx;
    rt01_setup(fx);
    rt01_check(fx,
               {
                   {"a.b.c", set_of({"t1", "t2", "t5", "t6", "t10", "t11", "t12", "t18", "t20",
                                     "t21", "t22", "t23", "t26"})},
                   {"a.b", set_of({"t3", "t5", "t6", "t7", "t8", "t9", "t11", "t12", "t15", "t21",
                                   "t22", "t23", "t26"})},
                   {"a.b.b", set_of({"t3", "t5", "t6", "t7", "t11", "t12", "t14", "t18", "t21",
                                     "t22", "t23", "t26"})},
                   {"", set_of({"t5", "t6", "t17"})},
                   {"b.c.c", set_of({"t5", "t6", "t18", "t21", "t22", "t23", "t26"})},
                   {"a.a.a.a.a", set_of({"t5", "t6", "t11", "t12", "t21", "t22", "t23"})},
                   {"vodka.gin", set_of({"t5", "t6", "t8", "t21", "t22", "t23"})},
                   {"vodka.martini", set_of({"t5", "t6", "t8", "t19", "t21", "t22", "t23"})},
                   {"b.b.c", set_of({"t5", "t6", "t10", "t13", "t18", "t21", "t22", "t23", "t26"})},
                   {"nothing.here.at.all", set_of({"t5", "t6", "t21", "t22", "t23"})},
                   {"oneword", set_of({"t5", "t6", "t21", "t22", "t23", "t25"})},
                   {"args-test", set_of({"t5", "t6", "t21", "t22", "t23", "t25", "t27"})},
               });
    // Two bindings that differ only in their arguments are two bindings.
    const auto bindings = fx.broker.bindings("X");
    CHECK(std::count_if(bindings.begin(), bindings.end(),
                        [](const auto& b) { return b.destination == "t27"; }) == 2);
}

TEST_CASE("topic routing table RMQ-RT-01 phase 2 after removing bindings routes only through the "
          "remaining ones",
          "[transport][in_memory]") {
    broker_fixture fx;
    rt01_setup(fx);
    for (const auto& [q, k] : rt01_bindings)
        if (q == "t1" || q == "t5" || q == "t11" || q == "t19" || q == "t21")
            REQUIRE_FALSE(fx.ch.queue_unbind(q, "X", k));
    REQUIRE_FALSE(
        fx.ch.queue_unbind("t27", "X", "args-test", letterbox::field_table{{"foo", "baz"}}));
    rt01_check(
        fx, {
                {"a.b.c", set_of({"t2", "t6", "t10", "t12", "t18", "t20", "t22", "t23", "t26"})},
                {"a.b", set_of({"t3", "t6", "t7", "t8", "t9", "t12", "t15", "t22", "t23", "t26"})},
                {"a.b.b", set_of({"t3", "t6", "t7", "t12", "t14", "t18", "t22", "t23", "t26"})},
                {"", set_of({"t6", "t17"})},
                {"b.c.c", set_of({"t6", "t18", "t22", "t23", "t26"})},
                {"a.a.a.a.a", set_of({"t6", "t12", "t22", "t23"})},
                {"vodka.gin", set_of({"t6", "t8", "t22", "t23"})},
                {"vodka.martini", set_of({"t6", "t8", "t22", "t23"})},
                {"b.b.c", set_of({"t6", "t10", "t13", "t18", "t22", "t23", "t26"})},
                {"nothing.here.at.all", set_of({"t6", "t22", "t23"})},
                {"oneword", set_of({"t6", "t22", "t23", "t25"})},
                {"args-test", set_of({"t6", "t22", "t23", "t25", "t27"})},
            });
}

TEST_CASE("topic routing table RMQ-RT-01 phase 3 deleting the exchange removes every binding",
          "[transport][in_memory]") {
    broker_fixture fx;
    rt01_setup(fx);
    REQUIRE_FALSE(fx.ch.exchange_delete("X"));
    CHECK_FALSE(fx.broker.has_exchange("X"));
    CHECK(fx.broker.bindings("X").empty());
    // Publishing to the deleted exchange is a 404; nothing is routed anywhere.
    CHECK(fx.ch.basic_publish(make_message("X", "a.b.c", "x")) == errc::not_found);
    CHECK_FALSE(fx.ch.is_open());
    CHECK(fx.broker.total_ready() == 0);
    // Re-declared, the exchange starts without bindings: a.b.c, b.b.c and "" route nowhere.
    fx.ch = fx.open_channel();
    fx.declare_exchange("X", topology::exchange_type::topic);
    const auto queues = rt01_queues();
    for (const char* key : {"a.b.c", "b.b.c", ""}) {
        INFO("routing key '" << key << "'");
        CHECK(route(fx, "X", key, queues).empty());
    }
}

TEST_CASE("topic wildcards RMQ-RT-02 match whole words only and routing keys are literal",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    for (const char* k : {"this.*.rules", "*.for.*", "simply#carrots"})
        fx.bind("Q", "amq.topic", k);
    for (const char* k : {"this.queue.rules", "this.exchange.rules", "another.queue.rules",
                          "carrots.for.power", "simplycarrots", "*.queue.rules"})
        REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.topic", k, k)));
    CHECK(fx.drain("Q") ==
          std::vector<std::string>{"this.queue.rules", "this.exchange.rules", "carrots.for.power"});
    // `#` inside a word is literal; a `#` word in a routing key is a literal word.
    fx.bind("Q", "amq.topic", "#.noclue");
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.topic", "#.bla", "#.bla")));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.topic", "#.noclue", "#.noclue")));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.topic", "simply#carrots", "literal")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"#.noclue", "literal"});
    // With `#` bound too, everything routes, and each message arrives once.
    fx.bind("Q", "amq.topic", "#");
    for (const char* k : {"this.queue.rules", "anything", "", "#.noclue"})
        REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.topic", k, k)));
    CHECK(fx.drain("Q") ==
          std::vector<std::string>{"this.queue.rules", "anything", "", "#.noclue"});
}

namespace {

/// Binds one queue per pattern to a fresh topic exchange (queue name = "p<i>") and returns the
/// patterns each key reaches.
struct pattern_router {
    broker_fixture& fx;
    std::vector<std::string> patterns;
    std::vector<std::string> queues;

    pattern_router(broker_fixture& f, const std::string& exchange, std::vector<std::string> ps)
        : fx(f)
        , patterns(std::move(ps))
        , x(exchange) {
        fx.declare_exchange(x, topology::exchange_type::topic);
        for (std::size_t i = 0; i < patterns.size(); ++i) {
            queues.push_back(x + "-p" + std::to_string(i));
            fx.declare_queue(queues.back());
            fx.bind(queues.back(), x, patterns[i]);
        }
    }

    std::set<std::string> matches(const std::string& key) {
        const auto hit = route(fx, x, key, queues);
        std::set<std::string> out;
        for (std::size_t i = 0; i < queues.size(); ++i)
            if (hit.count(queues[i]))
                out.insert(patterns[i]);
        return out;
    }

    std::string x;
};

using pattern_set = std::set<std::string>;

} // namespace

TEST_CASE("topic matching RMQ-RT-03 empty routing key matches only hash and the empty pattern",
          "[transport][in_memory]") {
    broker_fixture fx;
    pattern_router r(fx, "X", {"#", "foo.bar"});
    CHECK(r.matches("") == pattern_set{"#"});
    CHECK(r.matches("foo.bar") == pattern_set{"#", "foo.bar"});
}

TEST_CASE("topic matching RMQ-RT-03 hash in the middle matches zero or more words",
          "[transport][in_memory]") {
    broker_fixture fx;
    pattern_router r(fx, "X", {"#.c", "#.b.c", "a.#.d", "#.*.#"});
    CHECK(r.matches("a.b.c") == pattern_set{"#.c", "#.b.c", "#.*.#"});
    CHECK(r.matches("c") == pattern_set{"#.c", "#.*.#"});
    CHECK(r.matches("x.y.b.c") == pattern_set{"#.c", "#.b.c", "#.*.#"});
    CHECK(r.matches("a.d") == pattern_set{"a.#.d", "#.*.#"});
    CHECK(r.matches("a.b.c.d") == pattern_set{"a.#.d", "#.*.#"});
    CHECK(r.matches("x") == pattern_set{"#.*.#"});
    CHECK(r.matches("x.c") == pattern_set{"#.c", "#.*.#"});
}

TEST_CASE("topic matching RMQ-RT-03 overlapping filters each match independently",
          "[transport][in_memory]") {
    broker_fixture fx;
    pattern_router r(fx, "X",
                     {"a.b", "a.b.#", "a.b.c", "a.b.*", "a.b.d", "a.*.*", "a.*.#", "*.b.c"});
    CHECK(r.matches("a.b.c") == pattern_set{"a.b.#", "a.b.c", "a.b.*", "a.*.*", "a.*.#", "*.b.c"});
    CHECK(r.matches("a.b") == pattern_set{"a.b", "a.b.#", "a.*.#"});
}

TEST_CASE("topic matching RMQ-RT-03 a leading dot makes an empty first word",
          "[transport][in_memory]") {
    broker_fixture fx;
    pattern_router r(fx, "X", {".#", ".*", ".*.a.b.c"});
    CHECK(r.matches(".0.a.b.c") == pattern_set{".#", ".*.a.b.c"});
    // Empty words elsewhere: "a..b" has three words, the middle one empty.
    pattern_router r2(fx, "Y", {"a.*.b", "a.b", "a.#.b", "*"});
    CHECK(r2.matches("a..b") == pattern_set{"a.*.b", "a.#.b"});
    CHECK(r2.matches(".") == pattern_set{});
    CHECK(r2.matches("x.") == pattern_set{});
}

TEST_CASE("topic matching RMQ-RT-03 all-wildcard, alternating and deep patterns match 26-word keys",
          "[transport][in_memory]") {
    std::vector<std::string> letters;
    for (char c = 'a'; c <= 'z'; ++c)
        letters.emplace_back(1, c);
    auto join = [](const std::vector<std::string>& ws) {
        std::string s;
        for (std::size_t i = 0; i < ws.size(); ++i)
            s += (i ? "." : "") + ws[i];
        return s;
    };
    const std::string key26 = join(letters);
    std::vector<std::string> stars(26, "*");
    const std::string all_stars = join(stars);
    std::vector<std::string> alternating = letters;
    for (std::size_t i = 1; i < alternating.size(); i += 2)
        alternating[i] = "*";
    const std::string alt = join(alternating);

    broker_fixture fx;
    pattern_router r(fx, "X",
                     {all_stars + ".#", all_stars, alt, "a.#.z", "a.b.c.#", key26, "#.y.z"});
    CHECK(r.matches(key26) ==
          pattern_set{all_stars + ".#", all_stars, alt, "a.#.z", "a.b.c.#", key26, "#.y.z"});
    // 25 words: too few for 26 `*`s.
    auto letters25 = letters;
    letters25.pop_back();
    CHECK(r.matches(join(letters25)) == pattern_set{"a.b.c.#"});
    // 30 words: only the patterns that can absorb extra words.
    auto letters30 = letters;
    for (const char* w : {"y", "z", "y", "z"})
        letters30.emplace_back(w);
    CHECK(r.matches(join(letters30)) == pattern_set{all_stars + ".#", "a.#.z", "a.b.c.#", "#.y.z"});
    // Alternating literal/`*`: a literal mismatch at an odd position is fine, at an even one not.
    auto odd = letters;
    odd[3] = "X";
    auto even = letters;
    even[4] = "X";
    CHECK(r.matches(join(odd)) ==
          pattern_set{all_stars + ".#", all_stars, alt, "a.#.z", "a.b.c.#", "#.y.z"});
    CHECK(r.matches(join(even)) ==
          pattern_set{all_stars + ".#", all_stars, "a.#.z", "a.b.c.#", "#.y.z"});
}

TEST_CASE("topic matching RMQ-RT-03 UTF-8 words behave like ASCII words",
          "[transport][in_memory]") {
    broker_fixture fx;
    // CJK, emoji, Cyrillic, accented Latin.
    pattern_router r(fx, "X",
                     {"\xE6\x97\xA5\xE6\x9C\xAC.*", "#.\xF0\x9F\x9A\x80",
                      "\xD0\xBC\xD0\xB8\xD1\x80.#", "caf\xC3\xA9.*.ok"});
    CHECK(r.matches("\xE6\x97\xA5\xE6\x9C\xAC.x") == pattern_set{"\xE6\x97\xA5\xE6\x9C\xAC.*"});
    CHECK(r.matches("a.b.\xF0\x9F\x9A\x80") == pattern_set{"#.\xF0\x9F\x9A\x80"});
    CHECK(r.matches("\xD0\xBC\xD0\xB8\xD1\x80") == pattern_set{"\xD0\xBC\xD0\xB8\xD1\x80.#"});
    CHECK(r.matches("caf\xC3\xA9.\xF0\x9F\x9A\x80.ok") == pattern_set{"caf\xC3\xA9.*.ok"});
    // Byte-exact: "cafe" + combining accent is a different word than precomposed "café".
    CHECK(r.matches("cafe\xCC\x81.x.ok") == pattern_set{});
}

TEST_CASE("topic matching RMQ-RT-03 500 queues bound to the same key all receive one copy",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("X", topology::exchange_type::topic);
    std::vector<std::string> queues;
    for (int i = 0; i < 500; ++i) {
        queues.push_back("fan-" + std::to_string(i));
        fx.declare_queue(queues.back());
        fx.bind(queues.back(), "X", "big.fanout.#");
    }
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "big.fanout.now", "x")));
    CHECK(fx.broker.total_ready() == 500);
    for (const auto& q : queues)
        CHECK(fx.count(q) == tru(1, 1, 0));
    CHECK(fx.broker.counters().enqueued == 500);
    CHECK(fx.broker.counters().published == 1);
}

TEST_CASE("topic exchanges RMQ-RT-04 route the zero-word key only to their own bindings",
          "[transport][in_memory]") {
    broker_fixture fx;
    confirm_log log;
    log.attach(fx.ch);
    REQUIRE_FALSE(fx.ch.confirm_select());
    fx.declare_exchange("X1", topology::exchange_type::topic);
    fx.declare_exchange("X2", topology::exchange_type::topic);
    fx.declare_queue("Q1");
    fx.declare_queue("Q2");
    fx.bind("Q1", "X1", "");
    fx.bind("Q2", "X2", "");
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X1", "", "1")));
    CHECK(fx.ready("Q1") == 1);
    CHECK(fx.ready("Q2") == 0);
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X2", "", "2")));
    CHECK(fx.ready("Q1") == 1);
    CHECK(fx.ready("Q2") == 1);
    REQUIRE_FALSE(fx.ch.queue_unbind("Q1", "X1", ""));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X1", "", "3")));
    CHECK(fx.ready("Q1") == 1);
    CHECK(fx.ready("Q2") == 1);
    // Confirmed although the last one was unroutable.
    CHECK(log.acked() == std::vector<std::uint64_t>{1, 2, 3});
    CHECK(log.nacked().empty());
    CHECK(fx.broker.counters().unroutable == 1);
}

TEST_CASE("direct exchange RMQ-RT-06 routes by exact key and silently drops the unroutable",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    fx.declare_queue("AltQ");
    fx.bind("Q", "amq.direct", "Q");
    fx.bind("AltQ", "amq.direct", "AltQ");
    int returns = 0;
    fx.ch.on_return([&](const in_memory::returned_message&) { ++returns; });
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.direct", "Q", "to-q")));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.direct", "anyotherkey", "lost")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"to-q"});
    CHECK(fx.drain("AltQ").empty());
    CHECK(returns == 0);
    CHECK(fx.broker.counters().unroutable == 1);
    CHECK(fx.ch.is_open());
}

TEST_CASE("fanout exchange RMQ-RT-06 delivers every message to every bound queue in order",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    fx.declare_queue("AltQ");
    fx.bind("Q", "amq.fanout", "ignored-1");
    fx.bind("AltQ", "amq.fanout", "ignored-2");
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.fanout", "k1", "m1")));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.fanout", "", "m2")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"m1", "m2"});
    CHECK(fx.drain("AltQ") == std::vector<std::string>{"m1", "m2"});
}

TEST_CASE("default exchange RMQ-RT-07 routes to every declared queue by name and refuses bindings",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("", "Q", "implicit")));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("", "no-such-queue", "lost")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"implicit"});
    CHECK(fx.broker.counters().unroutable == 1);
    // queue.bind to the default exchange: 403 ACCESS_REFUSED.
    CHECK(fx.ch.queue_bind("Q", "", "other") == errc::access_refused);
    CHECK_FALSE(fx.ch.is_open());
}

TEST_CASE("bindings RMQ-RT-07 bind adds one binding and unbind removes it",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    CHECK(fx.broker.bindings("amq.direct").empty());
    fx.bind("Q", "amq.direct", "key");
    REQUIRE(fx.broker.bindings("amq.direct").size() == 1);
    CHECK(fx.broker.bindings("amq.direct")[0].destination == "Q");
    // Binding again with the same key and arguments is idempotent.
    fx.bind("Q", "amq.direct", "key");
    CHECK(fx.broker.bindings("amq.direct").size() == 1);
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.direct", "key", "a")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"a"});
    REQUIRE_FALSE(fx.ch.queue_unbind("Q", "amq.direct", "key"));
    CHECK(fx.broker.bindings("amq.direct").empty());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("amq.direct", "key", "b")));
    CHECK(fx.drain("Q").empty());
    // The implicit default-exchange binding is untouched.
    fx.publish("Q", "c");
    CHECK(fx.drain("Q") == std::vector<std::string>{"c"});
}

TEST_CASE("bindings RMQ-RT-07 deleting a queue removes all of its bindings",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("X", topology::exchange_type::topic);
    fx.declare_queue("Q");
    fx.declare_queue("Other");
    fx.bind("Q", "amq.direct", "k");
    fx.bind("Q", "X", "#");
    fx.bind("Other", "X", "#");
    std::error_code ec;
    fx.ch.queue_delete("Q", ec);
    REQUIRE_FALSE(ec);
    CHECK(fx.broker.bindings("amq.direct").empty());
    REQUIRE(fx.broker.bindings("X").size() == 1);
    CHECK(fx.broker.bindings("X")[0].destination == "Other");
    // Re-declaring Q does not bring the bindings back.
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "a", "a")));
    CHECK(fx.ready("Q") == 0);
    CHECK(fx.ready("Other") == 1);
}

TEST_CASE("bindings RMQ-RT-07 deleting the source exchange removes its bindings but not the "
          "default one",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("X", topology::exchange_type::direct);
    fx.declare_queue("Q");
    fx.bind("Q", "X", "k");
    REQUIRE_FALSE(fx.ch.exchange_delete("X"));
    CHECK_FALSE(fx.broker.has_exchange("X"));
    fx.declare_exchange("X", topology::exchange_type::direct);
    CHECK(fx.broker.bindings("X").empty());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "k", "via-x")));
    fx.publish("Q", "via-default");
    CHECK(fx.drain("Q") == std::vector<std::string>{"via-default"});
}

TEST_CASE("exchange-to-exchange bindings RMQ-RT-07 route through direct and fanout sources and "
          "unbind",
          "[transport][in_memory]") {
    const auto source_type =
        GENERATE(topology::exchange_type::direct, topology::exchange_type::fanout);
    const std::string source =
        source_type == topology::exchange_type::direct ? "amq.direct" : "amq.fanout";
    INFO("source " << source);
    broker_fixture fx;
    fx.declare_exchange("X", topology::exchange_type::direct);
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.exchange_bind("X", source, "Q"));
    fx.bind("Q", "X", "Q");
    REQUIRE_FALSE(fx.ch.basic_publish(make_message(source, "Q", "through")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"through"});
    auto e2e = fx.broker.bindings(source);
    REQUIRE(e2e.size() == 1);
    CHECK(e2e[0].kind == topology::destination_kind::exchange);
    CHECK(e2e[0].destination == "X");
    REQUIRE_FALSE(fx.ch.exchange_unbind("X", source, "Q"));
    CHECK(fx.broker.bindings(source).empty());
    REQUIRE_FALSE(fx.ch.basic_publish(make_message(source, "Q", "not-through")));
    CHECK(fx.drain("Q").empty());
}

TEST_CASE("exchange-to-exchange bindings RMQ-RT-07 disappear when either end is deleted",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("S", topology::exchange_type::fanout);
    fx.declare_exchange("D", topology::exchange_type::fanout);
    fx.declare_queue("Q");
    fx.bind("Q", "D", "");
    REQUIRE_FALSE(fx.ch.exchange_bind("D", "S", ""));
    REQUIRE(fx.broker.bindings("S").size() == 1);

    SECTION("deleting the destination") {
        REQUIRE_FALSE(fx.ch.exchange_delete("D"));
        CHECK(fx.broker.bindings("S").empty());
        fx.declare_exchange("D", topology::exchange_type::fanout);
        fx.bind("Q", "D", "");
        REQUIRE_FALSE(fx.ch.basic_publish(make_message("S", "", "x")));
        CHECK(fx.drain("Q").empty());
    }
    SECTION("deleting the source") {
        REQUIRE_FALSE(fx.ch.exchange_delete("S"));
        fx.declare_exchange("S", topology::exchange_type::fanout);
        CHECK(fx.broker.bindings("S").empty());
        REQUIRE_FALSE(fx.ch.basic_publish(make_message("S", "", "x")));
        CHECK(fx.drain("Q").empty());
        // The destination and its own binding are intact.
        REQUIRE_FALSE(fx.ch.basic_publish(make_message("D", "", "y")));
        CHECK(fx.drain("Q") == std::vector<std::string>{"y"});
    }
}

TEST_CASE("exchange-to-exchange cycles deliver each message at most once per queue",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("A", topology::exchange_type::fanout);
    fx.declare_exchange("B", topology::exchange_type::fanout);
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.exchange_bind("B", "A", ""));
    REQUIRE_FALSE(fx.ch.exchange_bind("A", "B", ""));
    fx.bind("Q", "A", "");
    fx.bind("Q", "B", "");
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("A", "", "once")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"once"});
}

TEST_CASE("bindings RMQ-RT-07 to an unknown queue or exchange close the channel with 404 and "
          "create nothing",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    fx.declare_exchange("X", topology::exchange_type::direct);
    SECTION("unknown queue") {
        CHECK(fx.ch.queue_bind("nope", "X", "k") == errc::not_found);
        CHECK(fx.ch.close_reason().text == "NOT_FOUND - no queue 'nope' in vhost '/'");
    }
    SECTION("unknown exchange") {
        CHECK(fx.ch.queue_bind("Q", "nope", "k") == errc::not_found);
        CHECK(fx.ch.close_reason().text == "NOT_FOUND - no exchange 'nope' in vhost '/'");
    }
    SECTION("unknown destination exchange of an exchange binding") {
        CHECK(fx.ch.exchange_bind("nope", "X", "k") == errc::not_found);
        CHECK(fx.ch.close_reason().text == "NOT_FOUND - no exchange 'nope' in vhost '/'");
    }
    SECTION("unknown source exchange of an exchange binding") {
        CHECK(fx.ch.exchange_bind("X", "nope", "k") == errc::not_found);
    }
    CHECK_FALSE(fx.ch.is_open());
    CHECK(fx.ch.close_reason().code == errc::not_found);
    CHECK(fx.broker.bindings("X").empty());
    CHECK_FALSE(fx.broker.has_exchange("nope"));
    CHECK_FALSE(fx.broker.queue("nope"));
    // Every later call on that channel fails; the connection is still usable.
    CHECK(fx.ch.queue_bind("Q", "X", "k") == errc::channel_closed);
    CHECK(fx.conn.is_open());
}

TEST_CASE("bindings RMQ-RT-07 with equal keys and different arguments are distinct on direct and "
          "fanout exchanges",
          "[transport][in_memory]") {
    const auto type = GENERATE(topology::exchange_type::direct, topology::exchange_type::fanout);
    INFO("exchange type " << topology::to_string(type));
    broker_fixture fx;
    fx.declare_exchange("X", type);
    fx.declare_queue("Q");
    fx.bind("Q", "X", "k", letterbox::field_table{{"arg", "one"}});
    fx.bind("Q", "X", "k", letterbox::field_table{{"arg", "two"}});
    CHECK(fx.broker.bindings("X").size() == 2);
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "k", "both")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"both"});
    REQUIRE_FALSE(fx.ch.queue_unbind("Q", "X", "k", letterbox::field_table{{"arg", "one"}}));
    CHECK(fx.broker.bindings("X").size() == 1);
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "k", "second")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"second"});
    REQUIRE_FALSE(fx.ch.queue_unbind("Q", "X", "k", letterbox::field_table{{"arg", "two"}}));
    REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "k", "none")));
    CHECK(fx.drain("Q").empty());
}

TEST_CASE("publishing to a missing exchange RMQ-RT-08 closes only that channel with 404",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    auto other = fx.open_channel();
    std::vector<letterbox::in_memory::close_reason> closed;
    fx.ch.on_close([&](const in_memory::close_reason& r) { closed.push_back(r); });
    CHECK(fx.ch.basic_publish(make_message("does-not-exist", "Q", "x")) == errc::not_found);
    CHECK_FALSE(fx.ch.is_open());
    REQUIRE(closed.size() == 1);
    CHECK(closed[0].code == errc::not_found);
    CHECK(closed[0].text == "NOT_FOUND - no exchange 'does-not-exist' in vhost '/'");
    CHECK(fx.ch.basic_publish(make_message("", "Q", "y")) == errc::channel_closed);
    // The connection and its other channels keep working; new channels open.
    CHECK(fx.conn.is_open());
    CHECK(other.is_open());
    REQUIRE_FALSE(other.basic_publish(make_message("", "Q", "from-other")));
    auto fresh = fx.open_channel();
    REQUIRE_FALSE(fresh.basic_publish(make_message("", "Q", "from-fresh")));
    CHECK(fx.drain("Q") == std::vector<std::string>{"from-other", "from-fresh"});
}

TEST_CASE("publishing to amq.default by name closes the channel with 404 on 3.10",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_queue("Q");
    CHECK(fx.ch.basic_publish(make_message("amq.default", "Q", "x")) == errc::not_found);
    CHECK(fx.ch.close_reason().text == "NOT_FOUND - no exchange 'amq.default' in vhost '/'");
    CHECK(fx.count("Q") == tru(0, 0, 0));
}

namespace {

letterbox::message with_headers(letterbox::field_table h, std::string body) {
    auto m = make_message("H", "", std::move(body));
    m.headers = std::move(h);
    return m;
}

} // namespace

TEST_CASE("headers exchange RMQ-RT-10 x-match all needs every binding header and any needs one",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("H", topology::exchange_type::headers);
    fx.declare_queue("all");
    fx.declare_queue("any");
    fx.declare_queue("default");
    fx.bind("all", "H", "", {{"x-match", "all"}, {"format", "pdf"}, {"type", "report"}});
    fx.bind("any", "H", "", {{"x-match", "any"}, {"format", "pdf"}, {"type", "report"}});
    // Without x-match the mode is `all`.
    fx.bind("default", "H", "", {{"format", "pdf"}, {"type", "report"}});
    REQUIRE_FALSE(
        fx.ch.basic_publish(with_headers({{"format", "pdf"}, {"type", "report"}}, "both")));
    REQUIRE_FALSE(fx.ch.basic_publish(
        with_headers({{"type", "report"}, {"format", "pdf"}, {"extra", 1}}, "both+extra")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"format", "pdf"}}, "one")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"format", "zip"}, {"type", "log"}}, "none")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({}, "empty")));
    CHECK(fx.drain("all") == std::vector<std::string>{"both", "both+extra"});
    CHECK(fx.drain("default") == std::vector<std::string>{"both", "both+extra"});
    CHECK(fx.drain("any") == std::vector<std::string>{"both", "both+extra", "one"});
}

TEST_CASE("headers exchange ignores x- binding arguments under plain all and any (3.10.8 §0.3 12)",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("H", topology::exchange_type::headers);
    fx.declare_queue("all-only-x");
    fx.declare_queue("any-only-x");
    fx.declare_queue("all-mixed");
    fx.bind("all-only-x", "H", "", {{"x-match", "all"}, {"x-tenant", "a"}});
    fx.bind("any-only-x", "H", "", {{"x-match", "any"}, {"x-tenant", "a"}});
    fx.bind("all-mixed", "H", "", {{"x-match", "all"}, {"x-tenant", "a"}, {"k", "v"}});
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({}, "nothing")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"x-tenant", "a"}}, "tenant-a")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"x-tenant", "b"}, {"k", "v"}}, "tenant-b+k")));
    // An `all` binding with only x- keys matches every message.
    CHECK(fx.drain("all-only-x") == std::vector<std::string>{"nothing", "tenant-a", "tenant-b+k"});
    // An `any` binding without usable keys matches nothing.
    CHECK(fx.drain("any-only-x").empty());
    // The x- key is ignored, the other one decides.
    CHECK(fx.drain("all-mixed") == std::vector<std::string>{"tenant-b+k"});
}

TEST_CASE("headers exchange all-with-x and any-with-x also match on x- headers",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("H", topology::exchange_type::headers);
    fx.declare_queue("all-with-x");
    fx.declare_queue("any-with-x");
    fx.bind("all-with-x", "H", "", {{"x-match", "all-with-x"}, {"x-tenant", "a"}, {"k", "v"}});
    fx.bind("any-with-x", "H", "", {{"x-match", "any-with-x"}, {"x-tenant", "a"}, {"k", "v"}});
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"x-tenant", "a"}, {"k", "v"}}, "both")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"x-tenant", "a"}}, "x-only")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"k", "v"}}, "k-only")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"x-tenant", "b"}}, "neither")));
    CHECK(fx.drain("all-with-x") == std::vector<std::string>{"both"});
    CHECK(fx.drain("any-with-x") == std::vector<std::string>{"both", "x-only", "k-only"});
}

TEST_CASE("headers exchange void binding values match presence and values compare with their types",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("H", topology::exchange_type::headers);
    fx.declare_queue("present");
    fx.declare_queue("int-one");
    fx.declare_queue("case");
    fx.bind("present", "H", "", {{"x-match", "all"}, {"flag", nullptr}});
    fx.bind("int-one", "H", "", {{"x-match", "all"}, {"n", std::int32_t{1}}});
    fx.bind("case", "H", "", {{"x-match", "any"}, {"colour", "Red"}});
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"flag", "anything"}}, "flag-string")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"flag", std::int64_t{7}}}, "flag-long")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"other", true}}, "no-flag")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"n", std::int32_t{1}}}, "int")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"n", "1"}}, "string")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"colour", "Red"}}, "Red")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"colour", "red"}}, "red")));
    CHECK(fx.drain("present") == std::vector<std::string>{"flag-string", "flag-long"});
    // int 1 is not string "1".
    CHECK(fx.drain("int-one") == std::vector<std::string>{"int"});
    // Values are case sensitive.
    CHECK(fx.drain("case") == std::vector<std::string>{"Red"});
}

TEST_CASE("headers exchange compares numbers by value whatever their types, as 3.10.8 does",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("H", topology::exchange_type::headers);
    fx.declare_queue("int");
    fx.declare_queue("double");
    fx.declare_queue("decimal");
    fx.bind("int", "H", "", {{"x-match", "any"}, {"v", std::int32_t{7}}});
    fx.bind("double", "H", "", {{"x-match", "any"}, {"v", 2.5}});
    fx.bind("decimal", "H", "", {{"x-match", "any"}, {"v", letterbox::decimal{1, 25}}});
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"v", std::int8_t{7}}}, "int8")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"v", std::uint16_t{7}}}, "uint16")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"v", std::int64_t{7}}}, "int64")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"v", 7.0}}, "double 7")));
    REQUIRE_FALSE(fx.ch.basic_publish(
        with_headers({{"v", letterbox::timestamp{std::chrono::seconds{7}}}}, "timestamp")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"v", "7"}}, "string")));
    REQUIRE_FALSE(fx.ch.basic_publish(with_headers({{"v", 2.5F}}, "float 2.5")));
    REQUIRE_FALSE(
        fx.ch.basic_publish(with_headers({{"v", letterbox::decimal{1, 25}}}, "decimal 2.5")));
    CHECK(fx.drain("int") ==
          std::vector<std::string>{"int8", "uint16", "int64", "double 7", "timestamp"});
    CHECK(fx.drain("double") == std::vector<std::string>{"float 2.5"});
    // A decimal is not a number to Erlang's ==: it matches only an equal decimal.
    CHECK(fx.drain("decimal") == std::vector<std::string>{"decimal 2.5"});
}

TEST_CASE("headers exchange refuses a binding whose x-match is not one of the four modes with 406",
          "[transport][in_memory]") {
    broker_fixture fx;
    fx.declare_exchange("H", topology::exchange_type::headers);
    fx.declare_queue("Q");
    for (const char* mode : {"all", "any", "all-with-x", "any-with-x"})
        fx.bind("Q", "H", mode, {{"x-match", mode}, {"k", "v"}});
    CHECK(fx.broker.bindings("H").size() == 4);
    SECTION("unknown mode") {
        CHECK(fx.ch.queue_bind("Q", "H", "", {{"x-match", "some"}}) == errc::precondition_failed);
        CHECK_THAT(fx.ch.close_reason().text,
                   Catch::StartsWith("PRECONDITION_FAILED - Invalid x-match field value"));
    }
    SECTION("not a longstr") {
        CHECK(fx.ch.queue_bind("Q", "H", "", {{"x-match", std::int32_t{1}}}) ==
              errc::precondition_failed);
        CHECK_THAT(fx.ch.close_reason().text,
                   Catch::StartsWith("PRECONDITION_FAILED - Invalid x-match field type"));
    }
    CHECK(fx.broker.bindings("H").size() == 4);
}

TEST_CASE("topic bindings with three hash words are accepted and route on 3.10 but refused with "
          "406 on the 4.3 profile",
          "[transport][in_memory]") {
    SECTION("3.10 accepts and routes") {
        broker_fixture fx;
        fx.declare_exchange("X", topology::exchange_type::topic);
        fx.declare_queue("Q");
        fx.bind("Q", "X", "#.#.#");
        fx.bind("Q", "X", "a.#.b.#.c.#");
        REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "a.b.c", "m")));
        REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "", "empty")));
        CHECK(fx.drain("Q") == std::vector<std::string>{"m", "empty"});
    }
    SECTION("4.3 refuses queue and exchange bindings with more than two") {
        broker_fixture fx(in_memory::broker_profile::rabbitmq_4_3());
        fx.declare_exchange("X", topology::exchange_type::topic);
        fx.declare_exchange("D", topology::exchange_type::fanout);
        fx.declare_queue("Q");
        // Two `#` words are fine, and `##`, `a#b`, `#a` are not wildcards.
        fx.bind("Q", "X", "#.b.#");
        fx.bind("Q", "X", "##.a#b.#a.#.x");
        REQUIRE_FALSE(fx.ch.basic_publish(make_message("X", "a.b.c", "routes")));
        CHECK(fx.drain("Q") == std::vector<std::string>{"routes"});
        CHECK(fx.ch.queue_bind("Q", "X", "#.#.#") == errc::precondition_failed);
        CHECK_FALSE(fx.ch.is_open());
        fx.ch = fx.open_channel();
        CHECK(fx.ch.queue_bind("Q", "X", "#.*.#.*.#") == errc::precondition_failed);
        fx.ch = fx.open_channel();
        CHECK(fx.ch.exchange_bind("D", "X", "a.#.b.#.c.#") == errc::precondition_failed);
        CHECK(fx.broker.bindings("X").size() == 2);
        // Unbinding is never refused.
        fx.ch = fx.open_channel();
        CHECK_FALSE(fx.ch.queue_unbind("Q", "X", "#.#.#"));
        CHECK(fx.ch.is_open());
    }
}

} // namespace unit_transport_in_memory_routing
