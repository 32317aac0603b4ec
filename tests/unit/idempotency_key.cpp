// SPDX-License-Identifier: BSL-1.0
#include <letterbox/idempotency_key.hpp>

#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace unit_idempotency_key {

namespace key = letterbox::idempotency_key;

static_assert(key::function<key::by_message_id>);
static_assert(key::function<key::by_header>);
static_assert(key::function<key::by_json_field>);
static_assert(key::function<std::optional<std::string> (*)(const letterbox::message&)>);
static_assert(!key::function<int (*)(const letterbox::message&)>);
static_assert(!key::function<std::optional<std::string> (*)(letterbox::message&)>);

TEST_CASE("a key text is its UUID when canonical, else a name-based UUID of the text",
          "[idempotency_key]") {
    const std::string canonical = "0b6f3c1e-8d6a-4c33-9b0e-6f1f2a3b4c5d";
    CHECK(key::from_text(canonical) == letterbox::parse_message_id(canonical));
    const auto order = key::from_text("order-42");
    REQUIRE(order);
    CHECK(order == key::from_text("order-42")); // deterministic: every delivery, every process
    CHECK(order != key::from_text("order-43"));
    CHECK(order->version() == boost::uuids::uuid::version_name_based_sha1);
    // Upper case is not canonical: it is a text like any other, not the UUID it spells.
    CHECK(key::from_text("0B6F3C1E-8D6A-4C33-9B0E-6F1F2A3B4C5D") != key::from_text(canonical));
    // Nothing, and the nil UUID, name no message.
    CHECK_FALSE(key::from_text(""));
    CHECK_FALSE(key::from_text("00000000-0000-0000-0000-000000000000"));
}

TEST_CASE("the default key is the message id, and the nil id is no key", "[idempotency_key]") {
    letterbox::message m;
    CHECK_FALSE(key::by_message_id{}(m));
    letterbox::message_id_generator ids{5};
    m.id = ids();
    CHECK(key::by_message_id{}(m) == m.id);
}

TEST_CASE("a header key reads strings, byte arrays and integers, and nothing else",
          "[idempotency_key]") {
    const key::by_header k("x-idempotency-key");
    CHECK(k.name() == "x-idempotency-key");
    letterbox::message m;
    CHECK_FALSE(k(m)); // absent
    m.headers.set("x-idempotency-key", std::string("pay-7"));
    CHECK(k(m) == key::from_text("pay-7"));
    m.headers.set("x-idempotency-key", letterbox::byte_array{std::byte{'p'}, std::byte{'7'}});
    CHECK(k(m) == key::from_text("p7"));
    m.headers.set("x-idempotency-key", std::int64_t{42});
    CHECK(k(m) == key::from_text("42"));
    m.headers.set("x-idempotency-key", std::int8_t{42});
    CHECK(k(m) == key::from_text("42"));
    // Malformed keys are refused rather than guessed.
    for (auto v : {letterbox::field_value(std::string()), letterbox::field_value(true),
                   letterbox::field_value(1.5), letterbox::field_value(nullptr),
                   letterbox::field_value(letterbox::field_table{{"a", std::string("b")}})}) {
        m.headers.set("x-idempotency-key", v);
        CHECK_FALSE(k(m));
    }
}

TEST_CASE("the dedup id key is the producer's x-letterbox-dedup-id, else the message id",
          "[idempotency_key]") {
    letterbox::message m;
    CHECK_FALSE(key::by_dedup_id{}(m));
    letterbox::message_id_generator ids{9};
    m.id = ids();
    CHECK(key::by_dedup_id{}(m) == m.id);
    m.headers.set(letterbox::headers::dedup_id, std::string("order-7-v1"));
    CHECK(key::by_dedup_id{}(m) == key::from_text("order-7-v1"));
    // Two messages with two ids and one dedup id are one key.
    letterbox::message again = m;
    again.id = ids();
    CHECK(key::by_dedup_id{}(again) == key::by_dedup_id{}(m));
    // A dedup id present but unusable is no key: never the message id in its place.
    m.headers.set(letterbox::headers::dedup_id, std::string());
    CHECK_FALSE(key::by_dedup_id{}(m));
}

TEST_CASE("a body field key reads a JSON pointer's string or integer, and nothing else",
          "[idempotency_key]") {
    const key::by_json_field k("/payment/id");
    CHECK(k.pointer() == "/payment/id");
    letterbox::message m;
    m.body = R"({"payment": {"id": "pay-7", "amount": 12}})";
    CHECK(k(m) == key::from_text("pay-7"));
    m.body = R"({"payment": {"id": 7}})";
    CHECK(k(m) == key::from_text("7"));
    m.body = R"({"payment": {"id": 18446744073709551615}})";
    CHECK(k(m) == key::from_text("18446744073709551615"));
    for (const char* body :
         {R"({"payment": {}})", R"({"payment": {"id": ""}})", R"({"payment": {"id": null}})",
          R"({"payment": {"id": [1]}})", R"({"payment": {"id": 1.5}})", R"({"payment": 3})",
          "not json", R"({"payment": {"id": "pay-7")", ""}) {
        INFO(body);
        m.body = body;
        CHECK_FALSE(k(m));
    }
}

TEST_CASE("a body field key refuses a malformed JSON pointer, naming it", "[idempotency_key]") {
    try {
        key::by_json_field k("payment/id");
        FAIL("accepted a pointer without a leading slash");
    } catch (const letterbox::error& e) {
        CHECK(e.code() == letterbox::errc::invalid_argument);
        CHECK_THAT(e.what(), Catch::Contains("payment/id"));
    }
}

} // namespace unit_idempotency_key
