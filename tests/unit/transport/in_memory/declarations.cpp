// SPDX-License-Identifier: BSL-1.0
// In-memory broker scenarios: what a declaration is compared with, what a quorum queue refuses,
// and the reply texts users grep for. Every text here was read from a real RabbitMQ 3.10.8 by
// the differential test (tests/integration/amqp_differential.cpp: reply_texts,
// quorum_declarations).

#include "scenario_fixture.hpp"

#include <letterbox/topology/exchange.hpp>

#include <string>
#include <utility>
#include <vector>

namespace unit_transport_in_memory_declarations {

using namespace broker_scenarios;

namespace {

topology::queue queue_named(std::string name, letterbox::field_table args = {},
                            bool durable = true) {
    topology::queue q;
    q.name = std::move(name);
    q.durable = durable;
    q.arguments = std::move(args);
    return q;
}

/// Declares `q` on a fresh channel of `fx` and returns the reply text it was refused with
/// ("ok" when accepted).
std::string declare_text(broker_fixture& fx, const topology::queue& q) {
    auto ch = fx.open_channel();
    if (!ch.queue_declare(q))
        return "ok";
    return ch.close_reason().text;
}

} // namespace

TEST_CASE("an inequivalent argument is named with both values quoted, or with its type when one "
          "side lacks it",
          "[transport][in_memory][declare]") {
    broker_fixture fx;
    using letterbox::field_table;
    REQUIRE(declare_text(fx, queue_named("Q", field_table{{"x-max-length", std::int64_t{1000}}})) ==
            "ok");
    const std::string prefix = "PRECONDITION_FAILED - inequivalent arg ";
    CHECK(declare_text(fx, queue_named("Q", field_table{{"x-max-length", std::int64_t{2000}}})) ==
          prefix + "'x-max-length' for queue 'Q' in vhost '/': received '2000' but current is "
                   "'1000'");
    // Integer widths are one type class: an int32 1000 is the same value.
    CHECK(declare_text(fx, queue_named("Q", field_table{{"x-max-length", std::int32_t{1000}}})) ==
          "ok");
    CHECK(declare_text(fx, queue_named("Q")) ==
          prefix + "'x-max-length' for queue 'Q' in vhost '/': received none but current is the "
                   "value '1000' of type 'long'");
    // Not validated again: a text is just not equivalent.
    CHECK(declare_text(fx, queue_named("Q", field_table{{"x-max-length", "1000"}})) ==
          prefix + "'x-max-length' for queue 'Q' in vhost '/': received '1000' but current is "
                   "'1000'");
    CHECK(declare_text(fx, queue_named("Q", field_table{{"x-max-length", std::int64_t{1000}},
                                                        {"x-max-priority", std::int64_t{5}}})) ==
          prefix + "'x-max-priority' for queue 'Q' in vhost '/': received the value '5' of type "
                   "'long' but current is none");
    CHECK(declare_text(fx, queue_named("Q", field_table{{"x-max-length", std::int64_t{1000}},
                                                        {"x-single-active-consumer", true}})) ==
          prefix + "'x-single-active-consumer' for queue 'Q' in vhost '/': received the value "
                   "'true' of type 'bool' but current is none");
    // A missing x-queue-type means classic.
    CHECK(declare_text(fx, queue_named("Q", field_table{{"x-max-length", std::int64_t{1000}},
                                                        {"x-queue-type", "classic"}})) == "ok");
    CHECK(declare_text(fx, queue_named("Q", field_table{{"x-max-length", std::int64_t{1000}},
                                                        {"x-queue-type", "quorum"}})) ==
          prefix + "'x-queue-type' for queue 'Q' in vhost '/': received the value 'quorum' of "
                   "type 'longstr' but current is none");
    CHECK(declare_text(
              fx, queue_named("Q", field_table{{"x-max-length", std::int64_t{1000}}}, false)) ==
          prefix + "'durable' for queue 'Q' in vhost '/': received 'false' but current is 'true'");
}

TEST_CASE("an exchange redeclared with another type names both types quoted",
          "[transport][in_memory][declare]") {
    broker_fixture fx;
    fx.declare_exchange("X", topology::exchange_type::direct);
    topology::exchange x;
    x.name = "X";
    x.type = topology::exchange_type::fanout;
    x.durable = true;
    CHECK(fx.ch.exchange_declare(x) == errc::precondition_failed);
    CHECK(fx.ch.close_reason().text ==
          "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'X' in vhost '/': received "
          "'fanout' but current is 'direct'");
}

TEST_CASE("another connection's exclusive queue, or a declaration whose exclusive flag differs, "
          "is refused with 405 and RabbitMQ's full text",
          "[transport][in_memory][declare]") {
    broker_fixture fx;
    auto q = queue_named("E", {}, false);
    q.exclusive = true;
    REQUIRE_FALSE(fx.ch.queue_declare(q));
    const std::string text =
        "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'E' in vhost '/'. It "
        "could be originally declared on another connection or the exclusive property value "
        "does not match that of the original declaration.";
    auto other = fx.broker.connect("other").open_channel();
    CHECK(other.queue_declare(q) == errc::resource_locked);
    CHECK(other.close_reason().text == text);
    // The owner may not declare it non-exclusive either.
    auto plain = q;
    plain.exclusive = false;
    auto ch = fx.open_channel();
    CHECK(ch.queue_declare(plain) == errc::resource_locked);
    CHECK(ch.close_reason().text == text);
}

TEST_CASE("deleting a queue that is not empty names it as RabbitMQ does",
          "[transport][in_memory][declare]") {
    broker_fixture fx;
    fx.declare_queue("busy");
    fx.publish("busy", "m");
    std::error_code ec;
    fx.ch.queue_delete("busy", ec, false, true);
    CHECK(ec == errc::precondition_failed);
    CHECK(fx.ch.close_reason().text == "PRECONDITION_FAILED - queue 'busy' in vhost '/' not empty");
}

TEST_CASE("a quorum queue refuses the classic-only arguments before it looks at its properties",
          "[transport][in_memory][declare]") {
    const auto arg = GENERATE(std::string("x-max-priority"), std::string("x-queue-mode"),
                              std::string("x-queue-master-locator"), std::string("x-queue-version"),
                              std::string("x-max-age"));
    INFO(arg);
    broker_fixture fx;
    letterbox::field_table args{{"x-queue-type", "quorum"}};
    args.set(arg, arg == "x-max-priority" || arg == "x-queue-version"
                      ? letterbox::field_value(std::int64_t{2})
                      : letterbox::field_value(std::string("lazy")));
    const std::string text = "PRECONDITION_FAILED - invalid arg '" + arg +
                             "' for queue 'QQ' in vhost '/' of queue type rabbit_quorum_queue";
    CHECK(declare_text(fx, queue_named("QQ", args)) == text);
    CHECK(declare_text(fx, queue_named("QQ", args, false)) == text); // before 'non-durable'
    CHECK_FALSE(fx.broker.queue("QQ"));
}

TEST_CASE("a quorum queue accepts the arguments RabbitMQ 3.10 accepts",
          "[transport][in_memory][declare]") {
    using letterbox::field_table;
    const auto [name, value] = GENERATE(
        std::pair<std::string, letterbox::field_value>{"x-single-active-consumer", true},
        std::pair<std::string, letterbox::field_value>{"x-message-ttl", std::int64_t{1000}},
        std::pair<std::string, letterbox::field_value>{"x-max-in-memory-length", std::int64_t{10}},
        std::pair<std::string, letterbox::field_value>{"x-dead-letter-strategy", "at-most-once"},
        std::pair<std::string, letterbox::field_value>{"x-delivery-limit", std::int64_t{3}},
        // 3.10 does not validate it (seen on 3.10.8); the model then sets no limit.
        std::pair<std::string, letterbox::field_value>{"x-delivery-limit", "three"});
    INFO(name);
    broker_fixture fx;
    field_table args{{"x-queue-type", "quorum"}};
    args.set(name, value);
    CHECK(declare_text(fx, queue_named("QQ", args)) == "ok");
}

TEST_CASE("a quorum queue reports an invalid argument value before an argument it refuses",
          "[transport][in_memory][declare]") {
    broker_fixture fx;
    letterbox::field_table args{{"x-queue-type", "quorum"},
                                {"x-max-length", std::int64_t{-1}},
                                {"x-max-priority", std::int64_t{5}}};
    CHECK(declare_text(fx, queue_named("QQ", args)) ==
          "PRECONDITION_FAILED - invalid arg 'x-max-length' for queue 'QQ' in vhost '/': "
          "{value_negative,-1}");
}

TEST_CASE("a classic queue refuses the arguments only quorum queues and streams take, after it "
          "validated the values",
          "[transport][in_memory][declare]") {
    using letterbox::field_table;
    using letterbox::field_value;
    const auto [arg, value] = GENERATE(
        std::pair<std::string, field_value>{"x-delivery-limit", "three"},
        std::pair<std::string, field_value>{"x-dead-letter-strategy", "at-most-once"},
        std::pair<std::string, field_value>{"x-max-in-memory-length", std::int64_t{5}},
        std::pair<std::string, field_value>{"x-quorum-initial-group-size", std::int64_t{1}});
    INFO(arg);
    broker_fixture fx;
    field_table args;
    args.set(arg, value);
    CHECK(declare_text(fx, queue_named("Q", args)) ==
          "PRECONDITION_FAILED - invalid arg '" + arg +
              "' for queue 'Q' in vhost '/' of queue type rabbit_classic_queue");
    // An invalid value is reported first (seen on 3.10.8 with x-delivery-limit).
    args.set("x-max-length", std::int64_t{-1});
    CHECK(declare_text(fx, queue_named("Q", args)) ==
          "PRECONDITION_FAILED - invalid arg 'x-max-length' for queue 'Q' in vhost '/': "
          "{value_negative,-1}");
}

TEST_CASE("invalid argument values are refused with RabbitMQ 3.10's texts",
          "[transport][in_memory][declare]") {
    using letterbox::field_table;
    const auto [args, why] = GENERATE(
        std::pair<field_table, std::string>{field_table{{"x-max-length", "many"}},
                                            "invalid arg 'x-max-length' for queue 'Q' in vhost "
                                            "'/': \"expected integer, got longstr\""},
        std::pair<field_table, std::string>{field_table{{"x-overflow", "explode"}},
                                            "invalid arg 'x-overflow' for queue 'Q' in vhost "
                                            "'/': invalid_overflow"},
        std::pair<field_table, std::string>{
            field_table{{"x-dead-letter-exchange", std::int32_t{1}}},
            "invalid type 'signedint' for arg "
            "'x-dead-letter-exchange' in queue 'Q' in vhost '/'"},
        std::pair<field_table, std::string>{field_table{{"x-dead-letter-routing-key", "k"}},
                                            "invalid arg 'x-dead-letter-routing-key' for queue "
                                            "'Q' in vhost '/': routing_key_but_no_dlx_defined"},
        std::pair<field_table, std::string>{field_table{{"x-queue-type", "weird"}},
                                            "invalid arg 'x-queue-type' for queue 'Q' in vhost "
                                            "'/': \"unsupported queue type 'weird'\""});
    broker_fixture fx;
    CHECK(declare_text(fx, queue_named("Q", args)) == "PRECONDITION_FAILED - " + why);
}

TEST_CASE("a reply text longer than a shortstr is cut to 255 bytes as RabbitMQ cuts it",
          "[transport][in_memory][declare]") {
    broker_fixture fx;
    // Long enough to push the text past 255 bytes, short enough to keep "It could" before the cut.
    const std::string name(150, 'q');
    auto q = queue_named(name, {}, false);
    q.exclusive = true;
    REQUIRE_FALSE(fx.ch.queue_declare(q));
    auto other = fx.broker.connect("other").open_channel();
    CHECK(other.queue_declare(q) == errc::resource_locked);
    const auto& text = other.close_reason().text;
    CHECK(text.size() == 255);
    CHECK(text.starts_with("RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '" +
                           name + "' in vhost '/'. It could"));
    CHECK(text.ends_with("..."));
}

} // namespace unit_transport_in_memory_declarations
