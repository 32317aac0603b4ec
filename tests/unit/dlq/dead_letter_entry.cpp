// SPDX-License-Identifier: BSL-1.0
// dead_letter_entry: parsing letterbox's fault headers and the broker's x-death history, and
// the JSON form.

#include <letterbox/dlq/dead_letter_entry.hpp>

#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include "dlq_world.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace unit_dlq_dead_letter_entry {

namespace {

using letterbox::field_array;
using letterbox::field_table;
using letterbox::dlq::dead_letter_entry;
using namespace dlq_test;

letterbox::timestamp seconds_at(std::int64_t s) {
    return letterbox::timestamp{std::chrono::seconds{s}};
}

/// An x-death entry as RabbitMQ writes it.
field_table death(const std::string& queue, const std::string& reason, std::int64_t count,
                  std::int64_t time, const std::string& exchange, const std::string& key) {
    return field_table{{std::string(headers::x_death_field::count), count},
                       {std::string(headers::x_death_field::reason), reason},
                       {std::string(headers::x_death_field::queue), queue},
                       {std::string(headers::x_death_field::time), seconds_at(time)},
                       {std::string(headers::x_death_field::exchange), exchange},
                       {std::string(headers::x_death_field::routing_keys),
                        field_array{letterbox::field_value(key)}}};
}

} // namespace

TEST_CASE("an explicitly dead-lettered message is read from letterbox's headers", "[dlq]") {
    world w;
    fault f;
    f.reason = "poison";
    f.exception_type = "std::invalid_argument";
    f.exception_message = "bad amount";
    f.attempts = 3;
    const auto id = w.dead_letter_explicitly(f, "payment.requested");
    auto got = w.await2<std::optional<letterbox::delivery>>(
        [&](auto h) { w.transport.async_get(dlq_name, h); });
    REQUIRE(got.second.has_value());

    const auto e = dead_letter_entry::from(got.second->msg);
    CHECK(e.msg == got.second->msg);
    CHECK(e.id == letterbox::to_string(id));
    CHECK(e.type == "payment.requested");
    CHECK(e.reason == "poison");
    CHECK(e.exception_type == "std::invalid_argument");
    CHECK(e.exception_message == "bad amount");
    CHECK(e.attempts == 3);
    CHECK(e.first_failure == at(0));
    CHECK(e.last_failure == at(10));
    CHECK(e.dead_lettered_at == at(11));
    CHECK(e.original_exchange == work_exchange);
    CHECK(e.original_routing_key == work_key);
    CHECK(e.original_queue == work_queue);
    CHECK(e.consumer_id == "billing");
    CHECK(e.replay_count == 0);
}

TEST_CASE("a message the broker dead-lettered is read from x-death", "[dlq]") {
    world w;
    w.run_for(90s);
    const auto id = w.dead_letter_natively("order.placed");
    auto got = w.await2<std::optional<letterbox::delivery>>(
        [&](auto h) { w.transport.async_get(dlq_name, h); });
    REQUIRE(got.second.has_value());

    const auto e = dead_letter_entry::from(got.second->msg);
    CHECK(e.id == letterbox::to_string(id));
    CHECK(e.reason == "rejected");
    CHECK(e.attempts == 1);
    CHECK(e.exception_type.empty());
    CHECK_FALSE(e.first_failure.has_value());
    CHECK_FALSE(e.last_failure.has_value());
    REQUIRE(e.dead_lettered_at.has_value());
    // x-death times are whole seconds of the broker's wall clock.
    CHECK(*e.dead_lettered_at == std::chrono::floor<std::chrono::seconds>(w.clock.wall_now()));
    CHECK(e.original_exchange == work_exchange);
    CHECK(e.original_routing_key == work_key);
    CHECK(e.original_queue == work_queue);
    CHECK(e.replay_count == 0);
}

TEST_CASE("x-death fallbacks: rejected counts summed, newest time, first death's key", "[dlq]") {
    letterbox::message m;
    m.headers.set(headers::x_death,
                  field_array{death("retry.q", "expired", 4, 300, "retry", "later"),
                              death("work.q", "rejected", 2, 200, "orders", "order.created"),
                              death("other.q", "rejected", 3, 100, "x", "y")});
    m.headers.set(headers::x_first_death_queue, "work.q");
    m.headers.set(headers::x_first_death_reason, "rejected");
    m.headers.set(headers::x_first_death_exchange, "orders");

    const auto e = dead_letter_entry::from(m);
    CHECK(e.reason == "rejected");
    CHECK(e.attempts == 5); // 2 + 3: expiries are not attempts
    CHECK(e.dead_lettered_at == letterbox::store_time(seconds_at(300)));
    CHECK(e.original_exchange == "orders");
    CHECK(e.original_routing_key == "order.created");
    CHECK(e.original_queue == "work.q");
}

TEST_CASE("letterbox's headers win over x-death", "[dlq]") {
    letterbox::message m;
    m.headers.set(headers::x_death, field_array{death("work.q", "rejected", 7, 100, "x", "y")});
    m.headers.set(headers::x_first_death_reason, "rejected");
    m.headers.set(headers::x_first_death_exchange, "x");
    m.headers.set(headers::x_first_death_queue, "work.q");
    m.headers.set(headers::death_reason, "poison");
    m.headers.set(headers::attempts, std::int64_t{2});
    m.headers.set(headers::dead_lettered_time, "2026-03-01T10:00:00.000Z");
    m.headers.set(headers::original_exchange, "orders");
    m.headers.set(headers::original_routing_key, "order.created");
    m.headers.set(headers::original_queue, "orders.q");
    m.headers.set(headers::replay_count, std::int32_t{2});

    const auto e = dead_letter_entry::from(m);
    CHECK(e.reason == "poison");
    CHECK(e.attempts == 2);
    CHECK(e.dead_lettered_at == letterbox::detail::parse_rfc3339("2026-03-01T10:00:00Z"));
    CHECK(e.original_exchange == "orders");
    CHECK(e.original_routing_key == "order.created");
    CHECK(e.original_queue == "orders.q");
    CHECK(e.replay_count == 2);
}

TEST_CASE("headers of the wrong type or with bad text leave their fields empty", "[dlq]") {
    letterbox::message m;
    m.headers.set(headers::death_reason, std::int64_t{5});
    m.headers.set(headers::attempts, "three");
    m.headers.set(headers::first_failure_time, "yesterday");
    m.headers.set(headers::last_failure_time, std::int64_t{1});
    m.headers.set(headers::x_death, "not an array");
    m.headers.set(headers::replay_count, std::int64_t{-4});

    const auto e = dead_letter_entry::from(m);
    CHECK(e.reason.empty());
    CHECK(e.attempts == 0);
    CHECK_FALSE(e.first_failure.has_value());
    CHECK_FALSE(e.last_failure.has_value());
    CHECK_FALSE(e.dead_lettered_at.has_value());
    CHECK(e.original_exchange.empty());
    CHECK(e.original_routing_key.empty());
    CHECK(e.replay_count == 0);
}

TEST_CASE("to_json gives one object with times as RFC 3339 and a text body as a string", "[dlq]") {
    letterbox::message m;
    m.id = letterbox::message_id_generator{1}();
    m.type = "order.placed";
    m.body = R"({"order":1,"note":"caf\u00e9 ☕"})";
    m.properties.content_type = "application/json";
    m.headers.set(headers::death_reason, "poison");
    m.headers.set(headers::exception_type, "std::runtime_error");
    m.headers.set(headers::exception_message, "boom");
    m.headers.set(headers::attempts, std::int64_t{4});
    m.headers.set(headers::last_failure_time, "2026-03-01T10:00:00.250Z");
    m.headers.set("x-tenant", "acme");

    const auto j = dead_letter_entry::from(m).to_json();
    CHECK(j.at("id") == letterbox::to_string(m.id));
    CHECK(j.at("type") == "order.placed");
    CHECK(j.at("reason") == "poison");
    CHECK(j.at("exception").at("type") == "std::runtime_error");
    CHECK(j.at("exception").at("message") == "boom");
    CHECK(j.at("attempts") == 4);
    CHECK(j.at("first_failure_time").is_null());
    CHECK(j.at("last_failure_time") == "2026-03-01T10:00:00.250Z");
    CHECK(j.at("dead_lettered_time").is_null());
    CHECK(j.at("replay_count") == 0);
    CHECK(j.at("headers").at("x-tenant") == "acme");
    CHECK(j.at("content_type") == "application/json");
    CHECK(j.at("body_encoding") == "utf-8");
    CHECK(j.at("body") == m.body);
    CHECK(nlohmann::json::parse(j.dump()) == j);
}

TEST_CASE("to_json base64-encodes a binary body and survives headers that are not UTF-8", "[dlq]") {
    letterbox::message m;
    m.body = std::string("\x00\x01\xff\xfe", 4) + "ab";
    m.headers.set(headers::exception_message, std::string("bad \xff byte"));
    m.headers.set("x-raw", std::string("\xc3\x28"));

    const auto j = dead_letter_entry::from(m).to_json();
    CHECK(j.at("body_encoding") == "base64");
    CHECK(j.at("body") == "AAH//mFi");
    CHECK(j.at("content_type").is_null());
    std::string text;
    REQUIRE_NOTHROW(text = j.dump());
    CHECK(nlohmann::json::parse(text).at("exception").at("message") == "bad \xEF\xBF\xBD byte");
}

TEST_CASE("bodies: text with control characters is binary, base64 pads", "[dlq]") {
    letterbox::message m;
    m.body = "a\x01";
    CHECK(dead_letter_entry::from(m).to_json().at("body_encoding") == "base64");
    m.body = "line one\r\n\tline two";
    CHECK(dead_letter_entry::from(m).to_json().at("body_encoding") == "utf-8");
    m.body = "\xe2\x82"; // a truncated sequence
    const auto j = dead_letter_entry::from(m).to_json();
    CHECK(j.at("body_encoding") == "base64");
    CHECK(j.at("body") == "4oI=");
    m.body = "";
    CHECK(dead_letter_entry::from(m).to_json().at("body") == "");
}

} // namespace unit_dlq_dead_letter_entry
