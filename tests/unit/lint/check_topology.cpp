// SPDX-License-Identifier: BSL-1.0

// lint::check_topology: for every rule of lint::rules a topology that triggers it and one that
// does not, on the broker profiles the rule applies to (docs/topology-lint.md).

#include <letterbox/lint/check_topology.hpp>

#include <letterbox/field_table.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/policy.hpp>
#include <letterbox/lint/rules.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/quorum_options.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace unit_lint_check_topology {

namespace lint = letterbox::lint;
namespace topology = letterbox::topology;
namespace in_memory = letterbox::in_memory;
using namespace std::chrono_literals;
using letterbox::field_table;
using lint::severity;
using profile = in_memory::broker_profile;
using strings = std::vector<std::string>;

namespace {

topology::queue queue(std::string name, topology::queue_arguments a = {}) {
    return {.name = std::move(name), .arguments = a.to_table()};
}

topology::queue_arguments dead_letters_to(std::string exchange,
                                          std::optional<std::string> key = std::nullopt) {
    topology::queue_arguments a;
    a.dead_letter_exchange = std::move(exchange);
    a.dead_letter_routing_key = std::move(key);
    return a;
}

topology::queue_arguments expiring_to(std::string exchange, std::optional<std::string> key,
                                      std::chrono::milliseconds ttl = 5ms) {
    auto a = dead_letters_to(std::move(exchange), std::move(key));
    a.message_ttl = ttl;
    return a;
}

topology::queue_arguments quorum(topology::queue_arguments a = {}) {
    a.type = topology::queue_type::quorum;
    return a;
}

topology::exchange exchange(std::string name,
                            topology::exchange_type type = topology::exchange_type::direct) {
    return {.name = std::move(name), .type = type};
}

topology::binding binding_of(std::string source, std::string queue, std::string key = "") {
    return {.source = std::move(source),
            .destination = std::move(queue),
            .routing_key = std::move(key)};
}

std::vector<lint::finding> of(const std::vector<lint::finding>& all, std::string_view code) {
    std::vector<lint::finding> out;
    for (const auto& f : all)
        if (f.code == code)
            out.push_back(f);
    return out;
}

std::vector<lint::finding> check(const lint::broker_topology& t, const profile& p,
                                 const std::vector<lint::consumer_settings>& consumers = {}) {
    return lint::check_topology(t, p, consumers);
}

const profile v3_10 = profile::rabbitmq_3_10();
const profile v3_13_0 = profile::rabbitmq_3_13_0();
const profile v3_13 = profile::rabbitmq_3_13();
const profile v4_0 = profile::rabbitmq_4_0();
const profile v4_3 = profile::rabbitmq_4_3();

/// The ring of dead_lettering.cpp's DLX-06: b (rejected) -> a2 (expires) -> a3 (expires) -> b.
lint::broker_topology reject_expire_expire_ring() {
    return {.queues = {queue("b", dead_letters_to("", "a2")), queue("a2", expiring_to("", "a3")),
                       queue("a3", expiring_to("", "b"))}};
}

} // namespace

TEST_CASE("LB-DLX-MISSING is reported for a dead-letter exchange that does not exist and not "
          "for the default, an amq.* or a declared exchange",
          "[lint]") {
    lint::broker_topology t{
        .exchanges = {exchange("dlx")},
        .queues = {queue("orders", dead_letters_to("gone", "dlq")), queue("dlq")}};
    auto found = of(check(t, v3_10), lint::codes::dlx_missing);
    REQUIRE(found.size() == 1);
    CHECK(found[0].level == severity::error);
    CHECK(found[0].objects == strings{"queue 'orders'", "exchange 'gone'"});
    CHECK(found[0].versions == strings{"3.10", "3.13.0", "3.13", "4.0", "4.3"});
    CHECK_THAT(found[0].why, Catch::Contains("does not exist"));

    for (const auto* x : {"dlx", "", "amq.direct"}) {
        INFO(x);
        t.queues[0] = queue("orders", dead_letters_to(x, "dlq"));
        t.bindings = {binding_of(x, "dlq", "dlq")};
        CHECK(of(check(t, v3_10), lint::codes::dlx_missing).empty());
    }
}

TEST_CASE("LB-DLX-MISSING names the policy that set the missing dead-letter exchange", "[lint]") {
    const lint::broker_topology t{
        .queues = {queue("orders")},
        .policies = {{.name = "dl",
                      .pattern = "^orders$",
                      .definition = field_table{{"dead-letter-exchange", "gone"}}}}};
    auto found = of(check(t, v4_0), lint::codes::dlx_missing);
    REQUIRE(found.size() == 1);
    CHECK(found[0].objects == strings{"queue 'orders'", "exchange 'gone'", "policy 'dl'"});
}

TEST_CASE("LB-DLX-UNROUTABLE is reported when nothing routes the dead letter and not when a "
          "binding does",
          "[lint]") {
    using topology::exchange_type;
    SECTION("a direct exchange without a binding for the key") {
        lint::broker_topology t{
            .exchanges = {exchange("dlx")},
            .queues = {queue("orders", dead_letters_to("dlx", "dead")), queue("dlq")},
            .bindings = {binding_of("dlx", "dlq", "other")}};
        auto found = of(check(t, v3_10), lint::codes::dlx_unroutable);
        REQUIRE(found.size() == 1);
        CHECK(found[0].objects == strings{"queue 'orders'", "exchange 'dlx'"});
        t.bindings.push_back(binding_of("dlx", "dlq", "dead"));
        CHECK(of(check(t, v3_10), lint::codes::dlx_unroutable).empty());
    }
    SECTION("the default exchange and a key naming no queue") {
        lint::broker_topology t{.queues = {queue("orders", dead_letters_to("", "orders.dlq"))}};
        CHECK(of(check(t, v3_10), lint::codes::dlx_unroutable).size() == 1);
        t.queues.push_back(queue("orders.dlq"));
        CHECK(of(check(t, v3_10), lint::codes::dlx_unroutable).empty());
    }
    SECTION("no dead-letter key and an exchange without bindings") {
        lint::broker_topology t{.exchanges = {exchange("dlx", exchange_type::fanout)},
                                .queues = {queue("orders", dead_letters_to("dlx")), queue("dlq")}};
        CHECK(of(check(t, v3_10), lint::codes::dlx_unroutable).size() == 1);
        t.bindings = {binding_of("dlx", "dlq")};
        CHECK(of(check(t, v3_10), lint::codes::dlx_unroutable).empty());
    }
    SECTION("a topic pattern, an exchange-to-exchange binding and an alternate exchange route") {
        auto ae = exchange("dlx-ae", exchange_type::fanout);
        auto dlx = exchange("dlx", exchange_type::topic);
        lint::broker_topology t{.exchanges = {dlx, exchange("inner", exchange_type::topic), ae},
                                .queues = {queue("a", dead_letters_to("dlx", "dead.a")),
                                           queue("b", dead_letters_to("dlx", "dead.b")),
                                           queue("c", dead_letters_to("dlx", "other")),
                                           queue("dlq")},
                                .bindings = {binding_of("dlx", "dlq", "dead.a"),
                                             {.source = "dlx",
                                              .destination = "inner",
                                              .routing_key = "dead.*",
                                              .kind = topology::destination_kind::exchange},
                                             binding_of("inner", "dlq", "#.b")}};
        auto found = of(check(t, v3_10), lint::codes::dlx_unroutable);
        REQUIRE(found.size() == 1);
        CHECK(found[0].objects[0] == "queue 'c'");
        t.exchanges[0].arguments.set("alternate-exchange", "dlx-ae");
        t.bindings.push_back(binding_of("dlx-ae", "dlq"));
        CHECK(of(check(t, v3_10), lint::codes::dlx_unroutable).empty());
    }
}

TEST_CASE("LB-DLX-NONE warns for a queue whose consumer rejects, notes an expiring queue and "
          "says nothing of a plain queue",
          "[lint]") {
    topology::queue_arguments ttl;
    ttl.message_ttl = 1000ms;
    topology::queue_arguments bounded;
    bounded.max_length = 10;
    bounded.overflow = topology::overflow_behaviour::reject_publish;
    const lint::broker_topology t{
        .queues = {queue("work"), queue("cache", ttl), queue("plain"), queue("bounded", bounded)}};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "work", .failures = lint::failure_handling::reject}};
    auto found = of(check(t, v3_10, consumers), lint::codes::dlx_none);
    REQUIRE(found.size() == 2);
    CHECK(found[0].level == severity::warning);
    CHECK(found[0].objects == strings{"queue 'work'", "consumer of 'work'"});
    CHECK(found[1].level == severity::info);
    CHECK(found[1].objects == strings{"queue 'cache'"});
    CHECK(of(check(t, v3_10), lint::codes::dlx_none).size() == 1); // no consumer: only the note
}

TEST_CASE("LB-DLX-CYCLE is reported for a ring of queues that only expire and not once a "
          "consumer rejects in one of them",
          "[lint]") {
    const lint::broker_topology t{.queues = {queue("a", expiring_to("", "b")),
                                             queue("b", expiring_to("", "c")),
                                             queue("c", expiring_to("", "a")), queue("d")}};
    for (const auto& p : profile::known()) {
        INFO(p.name);
        auto found = of(check(t, p), lint::codes::dlx_cycle);
        REQUIRE(found.size() == 1);
        // Without consumer settings nobody says whether the queues are consumed: a warning.
        CHECK(found[0].level == severity::warning);
        CHECK_THAT(found[0].why, Catch::Contains("no consumer settings were given"));
        CHECK(found[0].objects == strings{"queue 'a'", "queue 'b'", "queue 'c'"});
    }
    // With the application's consumers given, none of which consumes the ring: an error.
    const std::vector<lint::consumer_settings> elsewhere{{.queue = "d"}};
    auto known = of(check(t, v3_13, elsewhere), lint::codes::dlx_cycle);
    REQUIRE(known.size() == 1);
    CHECK(known[0].level == severity::error);
    const std::vector<lint::consumer_settings> rejecting{
        {.queue = "b", .failures = lint::failure_handling::reject}};
    CHECK(of(check(t, v3_13, rejecting), lint::codes::dlx_cycle).empty());
}

TEST_CASE("LB-DLX-CYCLE is reported for a queue whose expired messages go back into itself",
          "[lint]") {
    lint::broker_topology t{.queues = {queue("q", expiring_to("", std::nullopt))}};
    auto found = of(check(t, v4_0), lint::codes::dlx_cycle);
    REQUIRE(found.size() == 1);
    CHECK(found[0].objects == strings{"queue 'q'"});
    t.queues[0] = queue("q", dead_letters_to("", std::nullopt)); // rejections may cycle
    CHECK(of(check(t, v4_0), lint::codes::dlx_cycle).empty());
}

TEST_CASE("LB-DLX-RING is reported on 3.10 for a reject-expire-expire ring and not on 3.13 "
          "or later",
          "[lint]") {
    const auto t = reject_expire_expire_ring();
    auto found = of(check(t, v3_10), lint::codes::dlx_ring);
    REQUIRE(found.size() == 1);
    CHECK(found[0].level == severity::error);
    CHECK(found[0].objects == strings{"queue 'b'", "queue 'a2'", "queue 'a3'"});
    CHECK(found[0].versions == strings{"3.10"});
    for (const auto& p : {v3_13_0, v3_13, v4_0, v4_3}) {
        INFO(p.name);
        CHECK(of(check(t, p), lint::codes::dlx_ring).empty());
    }
    CHECK(of(check(t, v3_10), lint::codes::dlx_cycle).empty()); // b rejects
}

TEST_CASE("LB-DLX-RING is not reported for the retry topology's ring of one rejection and one "
          "expiry, which has no finding at all",
          "[lint]") {
    const topology::retry_topology topo{
        .queue = "orders", .delays = {1s, 10s}, .rejects = topology::rejects_go_to::retry_queue};
    const lint::broker_topology t{.queues = topo.queues()};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "orders",
         .failures = lint::failure_handling::reject,
         .retry_queues = {topo.retry_queue_name(1s), topo.retry_queue_name(10s)}}};
    for (const auto& p : profile::known()) {
        INFO(p.name);
        CHECK(check(t, p, consumers).empty());
    }
    // Two expiring queues in a row after the rejection: the false cycle of 3.10.
    auto chained = t;
    chained.queues[0].arguments.set(topology::args::dead_letter_routing_key,
                                    topo.retry_queue_name(10s));
    CHECK(of(check(chained, v3_10, consumers), lint::codes::dlx_ring).size() == 1);
}

TEST_CASE("LB-REQUEUE-UNBOUNDED is an error on a classic queue, a warning on a quorum queue "
          "with a delivery limit and absent when attempts are limited",
          "[lint]") {
    auto limited = quorum(dead_letters_to("", "dlq"));
    limited.delivery_limit = 5;
    const lint::broker_topology t{.queues = {queue("classic"), queue("limited", limited),
                                             queue("qq", quorum()), queue("dlq")}};
    auto requeue = [](std::string q, bool attempts_limited) {
        return lint::consumer_settings{.queue = std::move(q),
                                       .failures = lint::failure_handling::requeue,
                                       .attempts_limited = attempts_limited};
    };
    const std::vector<lint::consumer_settings> consumers{
        requeue("classic", false), requeue("limited", false), requeue("qq", false),
        requeue("classic", true)};
    auto found = of(check(t, v3_10, consumers), lint::codes::requeue_unbounded);
    REQUIRE(found.size() == 3); // errors first
    CHECK(found[0].objects == strings{"consumer of 'classic'", "queue 'classic'"});
    CHECK(found[0].level == severity::error);
    // 3.10: a quorum queue without x-delivery-limit has no limit; 4.0: 20 by default.
    CHECK(found[1].objects[0] == "consumer of 'qq'");
    CHECK(found[1].level == severity::error);
    CHECK(found[2].objects[0] == "consumer of 'limited'");
    CHECK(found[2].level == severity::warning);
    auto on_4_0 = of(check(t, v4_0, consumers), lint::codes::requeue_unbounded);
    REQUIRE(on_4_0.size() == 3);
    CHECK(on_4_0[2].objects[0] == "consumer of 'qq'");
    CHECK(on_4_0[2].level == severity::warning);
}

TEST_CASE("LB-QQ-DELIVERY-LIMIT-DEFAULT is reported from 4.0 for a quorum queue without a "
          "limit and not on 3.10 or with a limit",
          "[lint]") {
    auto limited = quorum(dead_letters_to("", "dlq"));
    limited.delivery_limit = 5;
    lint::broker_topology t{.queues = {queue("with-dlx", quorum(dead_letters_to("", "dlq"))),
                                       queue("without", quorum()), queue("limited", limited),
                                       queue("dlq", quorum())}};
    for (const auto& p : {v3_10, v3_13_0, v3_13})
        CHECK(of(check(t, p), lint::codes::qq_delivery_limit_default).empty());
    {
        // 4.0: the dead-letter queue, whose scans requeue with basic.nack (a return there),
        // loses its dead letters: an error, first. A work queue loses a message only after 20
        // crashes or lost channels: warnings.
        auto found = of(check(t, v4_0), lint::codes::qq_delivery_limit_default);
        REQUIRE(found.size() == 3);
        CHECK(found[0].objects == strings{"queue 'dlq'"});
        CHECK(found[0].level == severity::error);
        CHECK_THAT(found[0].why, Catch::Contains("dead-letter queue"));
        CHECK(found[1].objects == strings{"queue 'with-dlx'"});
        CHECK(found[1].level == severity::warning);
        CHECK(found[1].versions == strings{"4.0", "4.3"});
        CHECK(found[2].objects == strings{"queue 'without'"});
        CHECK(found[2].level == severity::warning);
        CHECK_THAT(found[2].why, Catch::Contains("dropped"));
    }
    {
        // 4.3 counts only rejects and lost channels: a scan's nack no longer does.
        auto found = of(check(t, v4_3), lint::codes::qq_delivery_limit_default);
        REQUIRE(found.size() == 3);
        for (const auto& f : found)
            CHECK(f.level == severity::warning);
    }
    // The quorum retry topology: only its dead-letter queue, and a policy fixes it.
    const topology::retry_topology topo{.queue = "orders",
                                        .delays = {1s},
                                        .rejects = topology::rejects_go_to::dead_letter_queue,
                                        .quorum = topology::quorum_options{}};
    lint::broker_topology retry{.queues = topo.queues()};
    CHECK(check(retry, v3_10).empty());
    auto on_4_0 = check(retry, v4_0);
    REQUIRE(on_4_0.size() == 1);
    CHECK(on_4_0[0].code == lint::codes::qq_delivery_limit_default);
    CHECK(on_4_0[0].objects == strings{"queue 'orders.dlq'"});
    retry.policies = {{.name = "dlq",
                       .pattern = "\\.dlq$",
                       .apply_to = "quorum_queues",
                       .definition = field_table{{"delivery-limit", std::int64_t{-1}}}}};
    CHECK(check(retry, v4_0).empty());
    // The docs' advice: a delivery-limit -1 policy on the dead-letter queues.
    t.policies = {{.name = "dlq-unlimited",
                   .pattern = "^dlq$",
                   .apply_to = "quorum_queues",
                   .definition = field_table{{"delivery-limit", std::int64_t{-1}}}}};
    auto found = of(check(t, v4_0), lint::codes::qq_delivery_limit_default);
    REQUIRE(found.size() == 2); // both warnings, in the topology's order
    CHECK(found[0].objects == strings{"queue 'with-dlx'"});
    CHECK(found[1].objects == strings{"queue 'without'"});
}

TEST_CASE("LB-QQ-DELIVERY-LIMIT-NEGATIVE is reported on 3.10 and 3.13 and not from 4.0", "[lint]") {
    auto a = quorum(dead_letters_to("", "dlq"));
    a.delivery_limit = -1;
    lint::broker_topology t{.queues = {queue("orders", a), queue("dlq")}};
    for (const auto& p : {v3_10, v3_13_0, v3_13}) {
        INFO(p.name);
        auto found = of(check(t, p), lint::codes::qq_delivery_limit_negative);
        REQUIRE(found.size() == 1);
        CHECK(found[0].level == severity::error);
        CHECK(found[0].versions == strings{"3.10", "3.13.0", "3.13"});
    }
    for (const auto& p : {v4_0, v4_3})
        CHECK(of(check(t, p), lint::codes::qq_delivery_limit_negative).empty());
    a.delivery_limit = 0;
    t.queues[0] = queue("orders", a);
    CHECK(of(check(t, v3_10), lint::codes::qq_delivery_limit_negative).empty());
}

TEST_CASE("LB-QQ-ARGUMENT is reported for arguments and properties the queue type refuses "
          "and not for the ones it takes",
          "[lint]") {
    auto qq = queue("qq", quorum());
    qq.arguments.set("x-max-priority", std::int64_t{5});
    qq.arguments.set("x-queue-mode", "lazy");
    qq.durable = false;
    auto classic = queue("classic");
    classic.arguments.set("x-delivery-limit", std::int64_t{3});
    auto fine_qq = queue("fine-qq", quorum(expiring_to("", "dlq")));
    fine_qq.arguments.set("x-single-active-consumer", true);
    auto fine_classic = queue("fine-classic");
    fine_classic.arguments.set("x-max-priority", std::int64_t{5});
    fine_classic.exclusive = true;
    const lint::broker_topology t{.queues = {qq, classic, fine_qq, fine_classic, queue("dlq")}};
    auto found = of(check(t, v3_10), lint::codes::qq_argument);
    REQUIRE(found.size() == 2);
    CHECK(found[0].objects == strings{"queue 'qq'"});
    CHECK_THAT(found[0].why, Catch::Contains("x-max-priority, x-queue-mode, non-durable"));
    CHECK(found[1].objects == strings{"queue 'classic'"});
    CHECK_THAT(found[1].why, Catch::Contains("x-delivery-limit"));
}

TEST_CASE("LB-QQ-OVERFLOW-DLX is reported for a quorum queue with reject-publish-dlx and not "
          "for a classic one",
          "[lint]") {
    auto a = dead_letters_to("", "dlq");
    a.max_length = 10;
    a.overflow = topology::overflow_behaviour::reject_publish_dlx;
    const lint::broker_topology t{
        .queues = {queue("qq", quorum(a)), queue("classic", a), queue("dlq")}};
    for (const auto& p : profile::known()) {
        auto found = of(check(t, p), lint::codes::qq_overflow_dlx);
        REQUIRE(found.size() == 1);
        CHECK(found[0].objects == strings{"queue 'qq'"});
        CHECK(found[0].level == severity::warning);
    }
}

TEST_CASE("LB-AT-LEAST-ONCE-FALLBACK is reported without reject-publish or without a "
          "dead-letter exchange and not for the quorum retry topology",
          "[lint]") {
    auto no_overflow = quorum(dead_letters_to("", "dlq"));
    no_overflow.dead_letter_strategy = topology::dead_lettering::at_least_once;
    auto no_dlx = quorum();
    no_dlx.dead_letter_strategy = topology::dead_lettering::at_least_once;
    no_dlx.overflow = topology::overflow_behaviour::reject_publish;
    const lint::broker_topology t{
        .queues = {queue("a", no_overflow), queue("b", no_dlx), queue("dlq")}};
    auto found = of(check(t, v3_10), lint::codes::at_least_once_fallback);
    REQUIRE(found.size() == 2);
    CHECK_THAT(found[0].why, Catch::Contains("falls back to at-most-once"));
    CHECK_THAT(found[1].why, Catch::Contains("dead-letters nothing"));

    const topology::retry_topology topo{.queue = "orders",
                                        .delays = {1s},
                                        .rejects = topology::rejects_go_to::dead_letter_queue,
                                        .quorum = topology::quorum_options{}};
    for (const auto& p : profile::known())
        CHECK(of(check({.queues = topo.queues()}, p), lint::codes::at_least_once_fallback).empty());
}

TEST_CASE("LB-QQ-GLOBAL-QOS is reported for a quorum queue consumed with global qos, not on "
          "4.3 and not for a classic queue",
          "[lint]") {
    const lint::broker_topology t{.queues = {queue("qq", quorum()), queue("classic")}};
    const std::vector<lint::consumer_settings> consumers{{.queue = "qq", .global_qos = true},
                                                         {.queue = "classic", .global_qos = true}};
    for (const auto& p : {v3_10, v3_13_0, v3_13, v4_0}) {
        INFO(p.name);
        auto found = of(check(t, p, consumers), lint::codes::qq_global_qos);
        REQUIRE(found.size() == 1);
        CHECK(found[0].objects == strings{"consumer of 'qq'", "queue 'qq'"});
        CHECK(found[0].versions == strings{"3.10", "3.13.0", "3.13", "4.0"});
    }
    CHECK(of(check(t, v4_3, consumers), lint::codes::qq_global_qos).empty());
}

TEST_CASE("LB-INBOX-RETENTION is reported for an inbox retention shorter than the redelivery "
          "horizon and only then",
          "[lint]") {
    const lint::broker_topology t{.queues = {queue("a"), queue("b"), queue("c")}};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "a", .inbox_retention = 1h, .redelivery_horizon = 2h},
        {.queue = "b", .inbox_retention = 2h, .redelivery_horizon = 2h},
        {.queue = "c", .redelivery_horizon = 2h}}; // no inbox, or one that keeps ids forever
    auto found = of(check(t, v3_10, consumers), lint::codes::inbox_retention);
    REQUIRE(found.size() == 1);
    CHECK(found[0].objects == strings{"consumer of 'a'"});
    CHECK_THAT(found[0].why, Catch::Contains("1h") && Catch::Contains("2h"));
    CHECK_THAT(found[0].fix, Catch::Contains("at least 2h"));
}

TEST_CASE("LB-RETRY-NO-ROUTE-BACK is reported for a retry queue that is missing, has no TTL or "
          "leads elsewhere, and not for the retry topology's",
          "[lint]") {
    const topology::retry_topology topo{.queue = "orders", .delays = {1s}};
    lint::broker_topology t{.queues = topo.queues()};
    t.queues.push_back(queue("no-ttl", dead_letters_to("", "orders")));
    t.queues.push_back(queue("elsewhere", expiring_to("", "orders.dlq")));
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "orders",
         .retry_queues = {topo.retry_queue_name(1s), "missing", "no-ttl", "elsewhere"}}};
    auto found = of(check(t, v3_10, consumers), lint::codes::retry_no_route_back);
    REQUIRE(found.size() == 3);
    CHECK(found[0].objects == strings{"consumer of 'orders'", "queue 'missing'"});
    CHECK_THAT(found[0].why, Catch::Contains("does not exist"));
    CHECK_THAT(found[1].why, Catch::Contains("no x-message-ttl"));
    CHECK_THAT(found[2].why, Catch::Contains("'orders.dlq', not back to 'orders'"));
}

TEST_CASE("LB-XDEATH-CLIENT is reported on 3.13.0, 4.0 and 4.3 and not on 3.10 or 3.13", "[lint]") {
    const lint::broker_topology t{.queues = {queue("orders")}};
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "orders", .attempts_from_x_death = true}};
    for (const auto& p : {v3_13_0, v4_0, v4_3}) {
        auto found = of(check(t, p, consumers), lint::codes::xdeath_client);
        REQUIRE(found.size() == 1);
        CHECK(found[0].versions == strings{"3.13.0", "4.0", "4.3"});
    }
    for (const auto& p : {v3_10, v3_13})
        CHECK(of(check(t, p, consumers), lint::codes::xdeath_client).empty());
    CHECK(of(check(t, v4_0, {{.queue = "orders"}}), lint::codes::xdeath_client).empty());
}

TEST_CASE("LB-TOPIC-HASH-WORDS is reported on 4.3 for three hash words and not for two or "
          "before 4.3",
          "[lint]") {
    const lint::broker_topology t{
        .exchanges = {exchange("events", topology::exchange_type::topic), exchange("direct")},
        .queues = {queue("q")},
        .bindings = {binding_of("events", "q", "#.#.#"), binding_of("events", "q", "#.b.#"),
                     binding_of("amq.topic", "q", "a.#.b.#.c.#"),
                     binding_of("direct", "q", "#.#.#")}};
    auto found = of(check(t, v4_3), lint::codes::topic_hash_words);
    REQUIRE(found.size() == 2);
    CHECK(found[0].objects == strings{"binding 'events' -> 'q'"});
    CHECK(found[1].objects == strings{"binding 'amq.topic' -> 'q'"});
    CHECK(found[0].versions == strings{"4.3"});
    CHECK(of(check(t, v4_0), lint::codes::topic_hash_words).empty());
}

TEST_CASE("LB-POLICY-IGNORED is reported for a policy holding a key the queue type does not "
          "support and not once it is split per type",
          "[lint]") {
    lint::broker_topology t{
        .queues = {queue("orders", quorum(dead_letters_to("", "dlq"))), queue("dlq")},
        .policies = {{.name = "mixed",
                      .pattern = "orders",
                      .definition = field_table{{"message-ttl", std::int64_t{1000}},
                                                {"max-priority", std::int64_t{5}}}}}};
    auto found = of(check(t, v4_0), lint::codes::policy_ignored);
    REQUIRE(found.size() == 1);
    CHECK(found[0].objects == strings{"policy 'mixed'", "queue 'orders'"});
    CHECK_THAT(found[0].why, Catch::Contains("'max-priority'"));
    t.policies[0].definition.erase("max-priority");
    CHECK(of(check(t, v4_0), lint::codes::policy_ignored).empty());
}

TEST_CASE("LB-POLICY-PATTERN is reported for an invalid or overlong pattern and not for a "
          "valid one",
          "[lint]") {
    const lint::broker_topology t{
        .queues = {queue("orders")},
        .policies = {{.name = "broken", .pattern = "orders(", .definition = {}},
                     {.name = "long", .pattern = std::string(1001, 'a'), .definition = {}},
                     {.name = "fine", .pattern = "^orders\\.", .definition = {}}}};
    auto found = of(check(t, v3_10), lint::codes::policy_pattern);
    REQUIRE(found.size() == 2);
    CHECK(found[0].objects == strings{"policy 'broken'"});
    CHECK(found[1].objects == strings{"policy 'long'"});
    CHECK(found[0].level == severity::warning);
}

TEST_CASE("findings come errors first, then warnings, then notes, and the same input gives the "
          "same output",
          "[lint]") {
    auto t = reject_expire_expire_ring();
    topology::queue_arguments ttl;
    ttl.message_ttl = 10ms;
    t.queues.push_back(queue("cache", ttl));
    t.queues.push_back(queue("qq", quorum(dead_letters_to("", "b"))));
    const std::vector<lint::consumer_settings> consumers{
        {.queue = "b", .failures = lint::failure_handling::reject, .attempts_from_x_death = true}};
    const auto found = check(t, v4_0, consumers);
    REQUIRE(found.size() == 3);
    CHECK(found[0].code == lint::codes::qq_delivery_limit_default);
    CHECK(found[0].level == severity::warning);
    CHECK(found[1].code == lint::codes::xdeath_client);
    CHECK(found[2].code == lint::codes::dlx_none);
    CHECK(found[2].level == severity::info);
    const auto on_3_10 = check(t, v3_10, consumers);
    REQUIRE(on_3_10.size() == 2);
    CHECK(on_3_10[0].code == lint::codes::dlx_ring);
    CHECK(on_3_10[1].code == lint::codes::dlx_none);
    CHECK(check(t, v3_10, consumers) == on_3_10);
}

TEST_CASE("check_topology handles twenty thousand queues in one dead-letter ring without "
          "recursion",
          "[lint]") {
    constexpr std::size_t n = 20'000;
    lint::broker_topology t;
    for (std::size_t i = 0; i < n; ++i)
        t.queues.push_back(
            queue("q" + std::to_string(i), expiring_to("", "q" + std::to_string((i + 1) % n))));
    auto found = of(check(t, v3_10), lint::codes::dlx_cycle);
    REQUIRE(found.size() == 1);
    CHECK(found[0].objects.size() == n);
    // A fanout dead-letter exchange bound to every queue: each route is computed once.
    lint::broker_topology wide{.exchanges = {exchange("dlx", topology::exchange_type::fanout)}};
    for (std::size_t i = 0; i < 1'000; ++i) {
        wide.queues.push_back(queue("w" + std::to_string(i), dead_letters_to("dlx")));
        wide.bindings.push_back(binding_of("dlx", "w" + std::to_string(i)));
    }
    CHECK(check(wide, v3_10).empty());
}

} // namespace unit_lint_check_topology
