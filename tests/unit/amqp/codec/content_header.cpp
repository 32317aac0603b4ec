// SPDX-License-Identifier: BSL-1.0
// Content headers: the byte layout, the property flags, and the refused variants.
#include <letterbox/amqp/codec/content_header.hpp>

#include "bytes.hpp"

#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <system_error>

namespace unit_amqp_codec_content_header {

using namespace letterbox::amqp::codec;
using amqp_test::bytes;
using letterbox::errc;

namespace {

std::error_code decode_error(const std::string& payload) {
    std::error_code ec;
    (void)decode_content_header(payload, ec);
    return ec;
}

} // namespace

TEST_CASE("a content header: class, weight 0, 64-bit body size, flags, present properties",
          "[amqp][codec][content_header]") {
    content_header h;
    h.body_size = 5;
    h.properties.content_type = "text/plain";
    h.properties.delivery_mode = 2;
    const auto wire = bytes({0x00, 0x3C, 0x00, 0x00, 0,   0,   0,   0,   0,   0,   0,   5,   0x90,
                             0x00, 0x0A, 't',  'e',  'x', 't', '/', 'p', 'l', 'a', 'i', 'n', 0x02});
    std::string out;
    REQUIRE_FALSE(encode(h, out));
    CHECK(out == wire);
    std::error_code ec;
    CHECK(decode_content_header(wire, ec) == h);
    CHECK_FALSE(ec);
}

TEST_CASE("all 14 properties round-trip in flag order", "[amqp][codec][content_header]") {
    content_header h;
    h.body_size = 0xFFFFFFFFFFULL;
    auto& p = h.properties;
    p.content_type = "application/json";
    p.content_encoding = "gzip";
    p.headers = letterbox::field_table{{"x-letterbox-attempts", std::int64_t{3}}};
    p.delivery_mode = 1;
    p.priority = 9;
    p.correlation_id = "c";
    p.reply_to = "r";
    p.expiration = "1000";
    p.message_id = "m";
    p.timestamp = letterbox::timestamp{std::chrono::seconds{42}};
    p.type = "t";
    p.user_id = "guest";
    p.app_id = "app";
    p.cluster_id = "cluster";
    std::string out;
    REQUIRE_FALSE(encode(h, out));
    CHECK(static_cast<unsigned char>(out[12]) == 0xFF); // flags 0xFFFC
    CHECK(static_cast<unsigned char>(out[13]) == 0xFC);
    std::error_code ec;
    CHECK(decode_content_header(out, ec) == h);
    CHECK_FALSE(ec);
}

TEST_CASE("flag bits 1 and 0 (continuation) name no basic property: syntax_error",
          "[amqp][codec][content_header]") {
    const auto base = bytes({0x00, 0x3C, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0});
    CHECK_FALSE(decode_error(base + bytes({0x00, 0x00})));
    CHECK(decode_error(base + bytes({0x00, 0x02})) == errc::syntax_error);
    CHECK(decode_error(base + bytes({0x00, 0x01, 0x00, 0x00})) == errc::syntax_error);
}

TEST_CASE("a weight other than 0 or a class other than basic is syntax_error",
          "[amqp][codec][content_header]") {
    CHECK(decode_error(bytes({0x00, 0x3C, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})) ==
          errc::syntax_error);
    CHECK(decode_error(bytes({0x00, 0x32, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})) ==
          errc::syntax_error);
    std::string out;
    CHECK(encode(content_header{.class_id = 50}, out) == errc::invalid_argument);
}

TEST_CASE("a truncated header, a property past the end and trailing bytes are frame_error",
          "[amqp][codec][content_header]") {
    CHECK(decode_error(bytes({0x00, 0x3C, 0x00, 0x00, 0, 0, 0})) == errc::frame_error);
    // content-type flag set, length 10, 2 bytes present
    CHECK(decode_error(bytes({0x00, 0x3C, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0x0A, 'a',
                              'b'})) == errc::frame_error);
    // headers flag set, table length 0xFFFFFFFF
    CHECK(decode_error(bytes({0x00, 0x3C, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00, 0xFF,
                              0xFF, 0xFF, 0xFF})) == errc::frame_error);
    CHECK(decode_error(bytes({0x00, 0x3C, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x00})) ==
          errc::frame_error);
}

TEST_CASE("a shortstr property over 255 bytes is refused on encode",
          "[amqp][codec][content_header]") {
    content_header h;
    h.properties.correlation_id = std::string(256, 'c');
    std::string out = "x";
    CHECK(encode(h, out) == errc::invalid_argument);
    CHECK(out == "x");
}

} // namespace unit_amqp_codec_content_header
