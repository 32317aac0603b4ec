// SPDX-License-Identifier: BSL-1.0
// The frame reader: reassembly independent of read boundaries, and every check of a frame
// header made before the payload is waited for.
#include <letterbox/amqp/codec/frame_reader.hpp>

#include "bytes.hpp"

#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <system_error>
#include <vector>

namespace unit_amqp_codec_frame_reader {

using namespace letterbox::amqp::codec;
using amqp_test::bytes;
using amqp_test::raw_frame;
using letterbox::errc;

namespace {

struct owned_frame {
    frame_type type;
    std::uint16_t channel;
    std::string payload;
    friend bool operator==(const owned_frame&, const owned_frame&) = default;
};

/// Feeds `stream` in pieces of `chunk` bytes and collects every frame and the final error.
std::vector<owned_frame> read_all(frame_reader& reader, std::string_view stream, std::size_t chunk,
                                  std::error_code& ec) {
    std::vector<owned_frame> frames;
    ec.clear();
    while (!stream.empty() && !ec) {
        const auto n = std::min(chunk, stream.size());
        reader.feed(stream.substr(0, n));
        stream.remove_prefix(n);
        while (auto f = reader.next(ec))
            frames.push_back({f->type, f->channel, std::string(f->payload)});
    }
    return frames;
}

std::error_code first_error(std::string_view stream, std::uint32_t frame_max = 0,
                            std::uint16_t channel_max = 0) {
    frame_reader reader;
    REQUIRE_FALSE(reader.set_limits(frame_max, channel_max));
    std::error_code ec;
    (void)read_all(reader, stream, stream.size(), ec);
    return ec;
}

} // namespace

TEST_CASE("frames come out the same whatever the read boundaries", "[amqp][codec][frame_reader]") {
    const std::string stream = raw_frame(1, 0, bytes({0x00, 0x0A, 0x00, 0x33})) +
                               raw_frame(8, 0, "") + raw_frame(2, 5, std::string(14, '\0')) +
                               raw_frame(3, 5, "hello") + raw_frame(3, 5, "");
    frame_reader whole;
    std::error_code ec;
    const auto expected = read_all(whole, stream, stream.size(), ec);
    REQUIRE_FALSE(ec);
    REQUIRE(expected.size() == 5);
    CHECK(expected[0] == owned_frame{frame_type::method, 0, bytes({0x00, 0x0A, 0x00, 0x33})});
    CHECK(expected[1] == owned_frame{frame_type::heartbeat, 0, ""});
    CHECK(expected[3] == owned_frame{frame_type::body, 5, "hello"});
    for (std::size_t chunk = 1; chunk <= stream.size(); ++chunk) {
        frame_reader reader;
        CHECK(read_all(reader, stream, chunk, ec) == expected);
        CHECK_FALSE(ec);
        CHECK(reader.buffered() == 0);
    }
}

TEST_CASE("prepare and commit let a socket read straight into the reader",
          "[amqp][codec][frame_reader]") {
    frame_reader reader;
    CHECK(reader.bytes_wanted() == 8); // an empty frame's header and end octet
    const auto frame = raw_frame(3, 1, "abc");
    auto area = reader.prepare(64);
    std::memcpy(area.data(), frame.data(), 5);
    reader.commit(5);
    CHECK(reader.buffered() == 5);
    CHECK(reader.bytes_wanted() == 3);
    area = reader.prepare(64);
    std::memcpy(area.data(), frame.data() + 5, frame.size() - 5);
    reader.commit(frame.size() - 5);
    CHECK(reader.bytes_wanted() == 0);
    std::error_code ec;
    const auto f = reader.next(ec);
    REQUIRE(f);
    CHECK(f->payload == "abc");
    CHECK_FALSE(reader.next(ec));
    CHECK_FALSE(ec);
}

TEST_CASE("a frame of exactly frame_max passes and one byte more is frame_error at once",
          "[amqp][codec][frame_reader]") {
    // frame_max counts the header and the end octet: the payload may be frame_max - 8.
    CHECK_FALSE(first_error(raw_frame(3, 1, std::string(4096 - 8, 'x')), 4096));
    CHECK_FALSE(first_error(raw_frame(3, 1, std::string(4096 - 9, 'x')), 4096));
    // Only the 7 header bytes are given: the size alone is refused, nothing waits for 4089.
    frame_reader reader;
    reader.feed(raw_frame(3, 1, "", 4096 - 7).substr(0, 7));
    std::error_code ec;
    CHECK_FALSE(reader.next(ec));
    CHECK(ec == errc::frame_error);
    CHECK(letterbox::amqp_reply_code(errc::frame_error) == 501);
    CHECK(reader.bytes_wanted() == 0);
}

TEST_CASE("frame_max 0 means the 1 MiB ceiling, and larger limits are clamped to it",
          "[amqp][codec][frame_reader]") {
    frame_reader reader;
    CHECK(reader.frame_max() == frame_min_size);
    REQUIRE_FALSE(reader.set_limits(0, 0));
    CHECK(reader.frame_max() == frame_max_ceiling);
    CHECK(reader.channel_max() == 65535);
    REQUIRE_FALSE(reader.set_limits(64U * 1024U * 1024U, 10));
    CHECK(reader.frame_max() == frame_max_ceiling);
    CHECK(reader.set_limits(4095, 0) == errc::invalid_argument);
    CHECK(reader.frame_max() == frame_max_ceiling); // unchanged
}

TEST_CASE("undersized frames are frame_error: method < 4, header < 14, heartbeat != 0 bytes",
          "[amqp][codec][frame_reader]") {
    CHECK(first_error(raw_frame(1, 1, bytes({0x00, 0x3C, 0x00}))) == errc::frame_error);
    CHECK(first_error(raw_frame(1, 1, "")) == errc::frame_error);
    CHECK(first_error(raw_frame(2, 1, std::string(13, '\0'))) == errc::frame_error);
    CHECK(first_error(raw_frame(8, 0, "x")) == errc::frame_error);
    CHECK_FALSE(first_error(raw_frame(3, 1, ""))); // an empty body frame is legal
}

TEST_CASE("a frame-end octet other than 0xCE is frame_error", "[amqp][codec][frame_reader]") {
    CHECK(first_error(raw_frame(3, 1, "abc", 3, 0x00)) == errc::frame_error);
    CHECK(first_error(raw_frame(8, 0, "", 0, 0xCD)) == errc::frame_error);
    // A frame whose size is one too small puts a payload byte where the end octet belongs.
    CHECK(first_error(raw_frame(3, 1, "abc", 2)) == errc::frame_error);
}

TEST_CASE("an unknown frame type is frame_error after one byte, never skipped",
          "[amqp][codec][frame_reader]") {
    for (const int type : {0, 4, 5, 7, 9, 0x41, 0x48, 0xFF}) {
        frame_reader reader;
        reader.feed(std::string(1, static_cast<char>(type)));
        std::error_code ec;
        CHECK_FALSE(reader.next(ec));
        CHECK(ec == errc::frame_error);
    }
    // A server answering with its own protocol header ("AMQP" 0 0 9 1), or an HTTP server.
    CHECK(first_error(std::string(protocol_header)) == errc::frame_error);
    CHECK(first_error("HTTP/1.1 400 Bad Request\r\n") == errc::frame_error);
}

TEST_CASE("a channel above channel_max is channel_error, a heartbeat off channel 0 frame_error",
          "[amqp][codec][frame_reader]") {
    CHECK_FALSE(first_error(raw_frame(3, 2047, "x"), 0, 2047));
    CHECK(first_error(raw_frame(3, 2048, "x"), 0, 2047) == errc::channel_error);
    CHECK(first_error(raw_frame(3, 0xFFFF, "x"), 0, 2047) == errc::channel_error);
    CHECK(letterbox::amqp_reply_code(errc::channel_error) == 504);
    CHECK(first_error(raw_frame(8, 1, "")) == errc::frame_error);
}

TEST_CASE("payload sizes that would wrap 32-bit arithmetic are refused from the header",
          "[amqp][codec][frame_reader]") {
    // 0xFFFFFFF8 + 8 and 0xFFFFFFFF + 8 wrap to 0 and 7 in 32 bits.
    for (const std::uint32_t size : {0xFFFFFFF8U, 0xFFFFFFF9U, 0xFFFFFFFFU, 0x80000000U}) {
        frame_reader reader;
        REQUIRE_FALSE(reader.set_limits(0, 0));
        reader.feed(raw_frame(3, 1, "", size).substr(0, 7));
        std::error_code ec;
        CHECK_FALSE(reader.next(ec));
        CHECK(ec == errc::frame_error);
        CHECK(reader.buffered() == 7); // nothing was reserved or waited for
    }
}

TEST_CASE("the first error sticks, and frames before it still come out",
          "[amqp][codec][frame_reader]") {
    frame_reader reader;
    reader.feed(raw_frame(8, 0, "") + raw_frame(9, 0, ""));
    std::error_code ec;
    CHECK(reader.next(ec));
    CHECK_FALSE(ec);
    CHECK_FALSE(reader.next(ec));
    CHECK(ec == errc::frame_error);
    reader.feed(raw_frame(8, 0, ""));
    CHECK_FALSE(reader.next(ec));
    CHECK(ec == errc::frame_error);
    CHECK(reader.error() == errc::frame_error);
}

} // namespace unit_amqp_codec_frame_reader
