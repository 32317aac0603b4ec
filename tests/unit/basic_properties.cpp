// SPDX-License-Identifier: BSL-1.0
// letterbox::basic_properties and the one mapping to and from a message that both transports
// use (the AMQP codec names the same functions: tests/unit/amqp/codec/message_mapping.cpp
// checks the mapping in depth).
#include <letterbox/basic_properties.hpp>

#include <letterbox/foreign_message_id.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <string>

namespace unit_basic_properties {

using letterbox::basic_properties;
using letterbox::message;

TEST_CASE("no message-id gives the nil id, and the nil id publishes no message-id",
          "[basic_properties]") {
    const auto m = letterbox::to_message(basic_properties{}, "body");
    CHECK(m.id.is_nil());
    CHECK(m.body == "body");
    CHECK_FALSE(letterbox::to_basic_properties(m).message_id);
}

TEST_CASE("a foreign message-id becomes its name-based id and keeps its text in a header",
          "[basic_properties]") {
    basic_properties p;
    p.message_id = "order-42";
    const auto m = letterbox::to_message(p, "");
    CHECK(m.id == letterbox::foreign_message_id("order-42"));
    CHECK(m.headers.get<std::string>(letterbox::foreign_message_id_header) == "order-42");
    const auto back = letterbox::to_basic_properties(m);
    CHECK(back.message_id == "order-42");
    CHECK_FALSE(back.headers);
}

TEST_CASE("is_wire_header leaves out the headers that travel as properties", "[basic_properties]") {
    basic_properties p;
    p.message_id = "order-42";
    p.cluster_id = "rabbit@a";
    p.headers = letterbox::field_table{{"k", "v"}};
    const auto m = letterbox::to_message(p, "");
    CHECK(letterbox::is_wire_header(m, "k"));
    CHECK_FALSE(letterbox::is_wire_header(m, letterbox::foreign_message_id_header));
    CHECK_FALSE(letterbox::is_wire_header(m, letterbox::cluster_id_header));

    // The same header on a message with another id is an ordinary header.
    auto other = m;
    other.id = letterbox::message_id_generator{3}();
    CHECK(letterbox::is_wire_header(other, letterbox::foreign_message_id_header));
    CHECK(letterbox::to_basic_properties(other).headers->get<std::string>(
              letterbox::foreign_message_id_header) == "order-42");
}

} // namespace unit_basic_properties
