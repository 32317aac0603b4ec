// SPDX-License-Identifier: BSL-1.0

#include <letterbox/message_type.hpp>

#include <letterbox/payload.hpp>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace vendor {
struct invoice {
    int number = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(invoice, number)
} // namespace vendor

template <>
struct letterbox::message_type<vendor::invoice> {
    static constexpr std::string_view name = "invoice-issued";
};

namespace unit_message_type {

namespace {

struct order_shipped {
    static constexpr std::string_view message_type = "order-shipped";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order_shipped, order_id)

struct anonymous {
    int x = 0;
};

} // namespace

static_assert(letterbox::named_message<order_shipped>);
static_assert(letterbox::named_message<vendor::invoice>);
static_assert(!letterbox::named_message<anonymous>);
static_assert(letterbox::message_type<order_shipped>::name == "order-shipped");

TEST_CASE("make_message types a value by its message type, as JSON, with a fresh id",
          "[message_type][payload]") {
    letterbox::message_id_generator ids{5};
    const auto m = letterbox::make_message(ids, order_shipped{42}, "shipments");
    CHECK(m.type == "order-shipped");
    CHECK(m.routing_key == "shipments");
    CHECK(m.exchange.empty());
    CHECK(m.properties.content_type == std::string("application/json"));
    CHECK(nlohmann::json::parse(m.body) == nlohmann::json{{"order_id", 42}});
    CHECK_FALSE(m.id.is_nil());

    const auto other = letterbox::make_message(ids, vendor::invoice{3}, "billing.issued", "events");
    CHECK(other.type == "invoice-issued");
    CHECK(other.exchange == "events");
    CHECK(other.id != m.id);
}

} // namespace unit_message_type
