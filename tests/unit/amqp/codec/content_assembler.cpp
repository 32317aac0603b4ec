// SPDX-License-Identifier: BSL-1.0
// The content assembler: method + header + bodies into one command, and every sequence error.
#include <letterbox/amqp/codec/content_assembler.hpp>

#include "bytes.hpp"

#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <system_error>

namespace unit_amqp_codec_content_assembler {

using namespace letterbox::amqp::codec;
using letterbox::errc;

namespace {

std::string method_payload(const method& m) {
    std::string out;
    REQUIRE_FALSE(encode(m, out));
    return out;
}

std::string header_payload(std::uint64_t body_size) {
    std::string out;
    REQUIRE_FALSE(encode(content_header{.body_size = body_size}, out));
    return out;
}

/// Owns the payloads the frame views point at.
struct frames {
    std::string deliver = method_payload(basic_deliver{.consumer_tag = "c", .delivery_tag = 1});
    std::string ack = method_payload(basic_ack{.delivery_tag = 1});
    std::string close = method_payload(connection_close{.reply_code = 320});

    frame_view method_frame(std::uint16_t ch, const std::string& payload) const {
        return {frame_type::method, ch, payload};
    }
    static frame_view header(std::uint16_t ch, const std::string& payload) {
        return {frame_type::header, ch, payload};
    }
    static frame_view body(std::uint16_t ch, std::string_view payload) {
        return {frame_type::body, ch, payload};
    }
};

} // namespace

TEST_CASE("a deliver, its header and two body frames make one command",
          "[amqp][codec][content_assembler]") {
    frames f;
    content_assembler a;
    std::error_code ec;
    CHECK_FALSE(a.feed(f.method_frame(1, f.deliver), ec));
    CHECK(a.in_progress());
    const auto h = header_payload(8);
    CHECK_FALSE(a.feed(frames::header(1, h), ec));
    CHECK_FALSE(a.feed(frames::body(1, "abcd"), ec));
    auto c = a.feed(frames::body(1, "efgh"), ec);
    REQUIRE(c);
    CHECK_FALSE(ec);
    CHECK(c->channel == 1);
    CHECK(std::holds_alternative<basic_deliver>(c->method));
    CHECK(c->header->body_size == 8);
    CHECK(c->body == "abcdefgh");
    CHECK_FALSE(a.in_progress());
}

TEST_CASE("a method without content is a command at once, an empty body ends at the header",
          "[amqp][codec][content_assembler]") {
    frames f;
    content_assembler a;
    std::error_code ec;
    auto c = a.feed(f.method_frame(3, f.ack), ec);
    REQUIRE(c);
    CHECK_FALSE(c->header);
    CHECK_FALSE(a.feed(f.method_frame(3, f.deliver), ec));
    const auto h = header_payload(0);
    c = a.feed(frames::header(3, h), ec);
    REQUIRE(c);
    CHECK(c->body.empty());
    CHECK(c->header->body_size == 0);
}

TEST_CASE("a body longer than the header's declared size is unexpected_frame (505)",
          "[amqp][codec][content_assembler]") {
    frames f;
    content_assembler a;
    std::error_code ec;
    (void)a.feed(f.method_frame(1, f.deliver), ec);
    const auto h = header_payload(3);
    (void)a.feed(frames::header(1, h), ec);
    CHECK_FALSE(a.feed(frames::body(1, "ab"), ec));
    CHECK_FALSE(ec);
    CHECK_FALSE(a.feed(frames::body(1, "cd"), ec)); // 4 > 3
    CHECK(ec == errc::unexpected_frame);
    CHECK(letterbox::amqp_reply_code(errc::unexpected_frame) == 505);
    CHECK_FALSE(a.in_progress()); // dropped
}

TEST_CASE("frames out of sequence are unexpected_frame", "[amqp][codec][content_assembler]") {
    frames f;
    const auto h = header_payload(1);
    std::error_code ec;
    {
        content_assembler a; // header with no method before it
        CHECK_FALSE(a.feed(frames::header(1, h), ec));
        CHECK(ec == errc::unexpected_frame);
    }
    {
        content_assembler a; // body with no header
        CHECK_FALSE(a.feed(frames::body(1, "x"), ec));
        CHECK(ec == errc::unexpected_frame);
        (void)a.feed(f.method_frame(1, f.deliver), ec);
        CHECK_FALSE(a.feed(frames::body(1, "x"), ec));
        CHECK(ec == errc::unexpected_frame);
    }
    {
        content_assembler a; // a method while the body is expected
        (void)a.feed(f.method_frame(1, f.deliver), ec);
        (void)a.feed(frames::header(1, h), ec);
        CHECK_FALSE(a.feed(f.method_frame(1, f.ack), ec));
        CHECK(ec == errc::unexpected_frame);
    }
    {
        content_assembler a; // a header after a method without content
        (void)a.feed(f.method_frame(1, f.ack), ec);
        CHECK_FALSE(a.feed(frames::header(1, h), ec));
        CHECK(ec == errc::unexpected_frame);
    }
}

TEST_CASE("a declared body size above the limit is content_too_large before any body",
          "[amqp][codec][content_assembler]") {
    frames f;
    content_assembler a(1024);
    std::error_code ec;
    (void)a.feed(f.method_frame(1, f.deliver), ec);
    const auto h = header_payload(1025);
    CHECK_FALSE(a.feed(frames::header(1, h), ec));
    CHECK(ec == errc::content_too_large);
    CHECK(letterbox::amqp_reply_code(errc::content_too_large) == 311);
    // The largest possible declaration, with the default 128 MiB limit.
    content_assembler b;
    (void)b.feed(f.method_frame(1, f.deliver), ec);
    const auto huge = header_payload(~0ULL);
    CHECK_FALSE(b.feed(frames::header(1, huge), ec));
    CHECK(ec == errc::content_too_large);
}

TEST_CASE("connection methods only on channel 0, and nothing else there: command_invalid",
          "[amqp][codec][content_assembler]") {
    frames f;
    content_assembler a;
    std::error_code ec;
    CHECK_FALSE(a.feed(f.method_frame(1, f.close), ec));
    CHECK(ec == errc::command_invalid);
    CHECK_FALSE(a.feed(f.method_frame(0, f.ack), ec));
    CHECK(ec == errc::command_invalid);
    CHECK(a.feed(f.method_frame(0, f.close), ec));
    CHECK_FALSE(ec);
}

TEST_CASE("heartbeats are ignored, a frame of another channel mid-content is refused",
          "[amqp][codec][content_assembler]") {
    frames f;
    content_assembler a;
    std::error_code ec;
    CHECK_FALSE(a.feed({frame_type::heartbeat, 0, {}}, ec));
    CHECK_FALSE(ec);
    (void)a.feed(f.method_frame(1, f.deliver), ec);
    CHECK_FALSE(a.feed(frames::body(2, "x"), ec));
    CHECK(ec == errc::invalid_argument);
}

TEST_CASE("a method that does not decode reports the decoder's error",
          "[amqp][codec][content_assembler]") {
    content_assembler a;
    std::error_code ec;
    const std::string unknown = amqp_test::bytes({0x00, 0x3C, 0x00, 0x64});
    CHECK_FALSE(a.feed({frame_type::method, 1, unknown}, ec));
    CHECK(ec == errc::command_invalid);
    frames f;
    (void)a.feed(f.method_frame(1, f.deliver), ec);
    const std::string bad_header =
        amqp_test::bytes({0x00, 0x3C, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    CHECK_FALSE(a.feed({frame_type::header, 1, bad_header}, ec));
    CHECK(ec == errc::syntax_error);
    CHECK_FALSE(a.in_progress());
}

} // namespace unit_amqp_codec_content_assembler
