// SPDX-License-Identifier: BSL-1.0
// letterbox::message <-> basic properties: ids (native and foreign), delivery mode, type,
// headers, cluster-id, and the command overload.
#include <letterbox/amqp/codec/message_mapping.hpp>

#include <letterbox/error.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <system_error>

namespace unit_amqp_codec_message_mapping {

using namespace letterbox::amqp::codec;
using letterbox::errc;
using letterbox::message;

namespace {

message sample() {
    message m;
    m.id = *letterbox::parse_message_id("8d3c1a54-2f7e-4c0b-9a51-0c3e6d2b7f10");
    m.type = "order.created";
    m.headers.set("x-letterbox-attempts", std::int64_t{1});
    m.body = "{\"id\":42}";
    m.properties.content_type = "application/json";
    m.properties.correlation_id = "corr";
    m.properties.timestamp = letterbox::timestamp{std::chrono::seconds{1700000000}};
    m.properties.priority = 4;
    m.properties.app_id = "shop";
    return m;
}

} // namespace

TEST_CASE("a letterbox message maps to properties and back unchanged",
          "[amqp][codec][message_mapping]") {
    const auto m = sample();
    const auto p = to_basic_properties(m);
    CHECK(p.message_id == "8d3c1a54-2f7e-4c0b-9a51-0c3e6d2b7f10");
    CHECK(p.type == "order.created");
    CHECK(p.delivery_mode == 2);
    CHECK(p.headers == m.headers);
    CHECK_FALSE(p.cluster_id);
    CHECK(to_message(p, m.body) == m);

    message transient = m;
    transient.properties.persistent = false;
    CHECK(to_basic_properties(transient).delivery_mode == 1);
    CHECK(to_message(to_basic_properties(transient), m.body) == transient);
}

TEST_CASE("a nil id, an empty type and empty headers are left out",
          "[amqp][codec][message_mapping]") {
    const auto p = to_basic_properties(message{});
    CHECK_FALSE(p.message_id);
    CHECK_FALSE(p.type);
    CHECK_FALSE(p.headers);
    CHECK(to_message(p, "") == message{});
}

TEST_CASE("a foreign message-id is kept in a header and gives a stable name-based id",
          "[amqp][codec][message_mapping]") {
    basic_properties p;
    p.message_id = "order-42";
    const auto m = to_message(p, "body");
    // uuid5(428d4293-342f-4c54-826e-44324e7f7544, "order-42"): the wire contract.
    CHECK(letterbox::to_string(m.id) == "e363054d-4eab-5157-bd8e-e0431d0f9e47");
    CHECK(m.id == foreign_message_id("order-42"));
    CHECK(m.headers.get<std::string>(foreign_message_id_header) == "order-42");
    // Republishing sends the original text, not the derived UUID, and drops the header.
    const auto back = to_basic_properties(m);
    CHECK(back.message_id == "order-42");
    CHECK_FALSE(back.headers);
    // The same text always gives the same id: the inbox deduplicates redeliveries.
    CHECK(to_message(p, "other").id == m.id);
}

TEST_CASE("a UUID that is not in canonical lower-case text is treated as foreign",
          "[amqp][codec][message_mapping]") {
    basic_properties p;
    p.message_id = "8D3C1A54-2F7E-4C0B-9A51-0C3E6D2B7F10";
    const auto m = to_message(p, "");
    CHECK(m.id == foreign_message_id(*p.message_id));
    CHECK(to_basic_properties(m).message_id == p.message_id);
}

TEST_CASE("delivery-mode 2 is persistent, anything else transient",
          "[amqp][codec][message_mapping]") {
    basic_properties p;
    CHECK_FALSE(to_message(p, "").properties.persistent);
    p.delivery_mode = 1;
    CHECK_FALSE(to_message(p, "").properties.persistent);
    p.delivery_mode = 2;
    CHECK(to_message(p, "").properties.persistent);
    p.delivery_mode = 7;
    CHECK_FALSE(to_message(p, "").properties.persistent);
}

TEST_CASE("cluster-id travels in a header and comes back as the property",
          "[amqp][codec][message_mapping]") {
    basic_properties p;
    p.cluster_id = "rabbit@a";
    p.delivery_mode = 2;
    const auto m = to_message(p, "");
    CHECK(m.headers.get<std::string>(cluster_id_header) == "rabbit@a");
    CHECK(to_basic_properties(m) == p);
}

TEST_CASE("a delivered command becomes a message with its exchange and routing key",
          "[amqp][codec][message_mapping]") {
    command c;
    c.channel = 1;
    c.method = basic_deliver{
        .consumer_tag = "c", .delivery_tag = 3, .exchange = "orders", .routing_key = "orders.new"};
    c.header = content_header{.body_size = 4, .properties = to_basic_properties(sample())};
    c.body = "data";
    std::error_code ec;
    const auto m = to_message(std::move(c), ec);
    REQUIRE_FALSE(ec);
    CHECK(m.exchange == "orders");
    CHECK(m.routing_key == "orders.new");
    CHECK(m.body == "data");
    CHECK(m.id == sample().id);

    command ack;
    ack.method = basic_ack{};
    (void)to_message(std::move(ack), ec);
    CHECK(ec == errc::invalid_argument);
}

} // namespace unit_amqp_codec_message_mapping
