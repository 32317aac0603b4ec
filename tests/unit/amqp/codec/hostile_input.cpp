// SPDX-License-Identifier: BSL-1.0
// Regression tests for the AMQP client vulnerabilities of the reliability research (part d, D2),
// one per row that applies to a codec: each feeds what a rogue server (or a careless caller)
// sends through the reader, the assembler or the writer, and expects a clean error code (with
// the reply code to close the connection with) instead of a crash or an unbounded allocation.
// CVE-2023-35789 (credentials on the command line) concerns the connection and URL layers.
#include <letterbox/amqp/codec.hpp>

#include "bytes.hpp"

#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_amqp_codec_hostile_input {

using namespace letterbox::amqp::codec;
using amqp_test::bytes;
using amqp_test::raw_frame;
using letterbox::errc;

namespace {

/// A client's receive path: reader (with tuned limits) -> one assembler per channel seen.
/// Returns the first error and the commands completed before it.
struct receive_result {
    std::vector<command> commands;
    std::error_code error;
};

receive_result receive(const std::string& stream, std::uint32_t frame_max = 131072,
                       std::uint16_t channel_max = 2047,
                       std::uint64_t max_body = content_assembler::default_max_body_size) {
    frame_reader reader;
    REQUIRE_FALSE(reader.set_limits(frame_max, channel_max));
    std::vector<std::pair<std::uint16_t, content_assembler>> channels;
    receive_result r;
    reader.feed(stream);
    while (auto f = reader.next(r.error)) {
        auto it = std::find_if(channels.begin(), channels.end(),
                               [&](const auto& c) { return c.first == f->channel; });
        if (it == channels.end())
            it = channels.insert(channels.end(), {f->channel, content_assembler(max_body)});
        if (auto c = it->second.feed(*f, r.error))
            r.commands.push_back(std::move(*c));
        if (r.error)
            break;
    }
    return r;
}

std::string method_frame(std::uint16_t channel, const method& m) {
    frame_writer w;
    REQUIRE_FALSE(w.set_frame_max(0));
    std::string out;
    REQUIRE_FALSE(w.write_method(out, channel, m));
    return out;
}

std::string header_frame(std::uint16_t channel, std::uint64_t body_size) {
    std::string payload;
    REQUIRE_FALSE(encode(content_header{.body_size = body_size}, payload));
    return raw_frame(2, channel, payload);
}

const basic_deliver deliver{.consumer_tag = "c", .delivery_tag = 1, .routing_key = "k"};

} // namespace

TEST_CASE("CVE-2019-18609: a frame size near 2^32 is refused from its header, nothing is copied",
          "[amqp][codec][hostile]") {
    for (const std::uint32_t size : {0xFFFFFFFFU, 0xFFFFFFF8U, 0x7FFFFFFFU}) {
        const auto r = receive(raw_frame(3, 1, "", size).substr(0, 7) + std::string(64, 'A'));
        CHECK(r.error == errc::frame_error);
    }
    CHECK(letterbox::amqp_reply_code(errc::frame_error) == 501);
}

TEST_CASE("GHSA-9mmv-r8g3-qp46: undersized frames are refused before any size arithmetic",
          "[amqp][codec][hostile]") {
    CHECK(receive(raw_frame(1, 0, bytes({0x00, 0x0A}))).error == errc::frame_error);
    CHECK(receive(raw_frame(1, 0, "")).error == errc::frame_error);
    CHECK(receive(raw_frame(2, 1, std::string(2, '\0'))).error == errc::frame_error);
    // During the handshake: connection.start cut short inside its table.
    CHECK(receive(
              raw_frame(1, 0, bytes({0x00, 0x0A, 0x00, 0x0A, 0x00, 0x09, 0x00, 0x00, 0x01, 0x00})))
              .error == errc::frame_error);
}

TEST_CASE("GHSA-jh48-qjf5-fx5v: a server frame_max below 4096 is refused at tune",
          "[amqp][codec][hostile]") {
    auto r = receive(method_frame(0, connection_tune{.channel_max = 0, .frame_max = 512}));
    REQUIRE(r.commands.size() == 1);
    const auto& tune = std::get<connection_tune>(r.commands[0].method);
    std::error_code ec;
    (void)negotiate_frame_max(0, tune.frame_max, ec);
    CHECK(ec == errc::syntax_error);
    frame_reader reader;
    CHECK(reader.set_limits(tune.frame_max, 0) == errc::invalid_argument);
}

TEST_CASE("GHSA-jgjf-7fwf-f3c7: byte-field lengths that would wrap an offset are refused",
          "[amqp][codec][hostile]") {
    // connection.start whose mechanisms longstr claims 0xFFFFFFFF bytes
    const auto start = bytes({0x00, 0x0A, 0x00, 0x0A, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0xFF,
                              0xFF, 0xFF, 0xFF, 'P', 'L', 'A', 'I', 'N'});
    CHECK(receive(raw_frame(1, 0, start)).error == errc::frame_error);
    // a headers table claiming 0xFFFFFFFC bytes inside a content header
    const auto header =
        bytes({0x00, 0x3C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00, 0xFF, 0xFF, 0xFF, 0xFC, 0x01});
    CHECK(receive(method_frame(1, deliver) + raw_frame(2, 1, header)).error == errc::frame_error);
}

TEST_CASE("GHSA-hfjv-vcp3-39wh: an oversized body is split, never written as one frame",
          "[amqp][codec][hostile]") {
    frame_writer w;
    REQUIRE_FALSE(w.set_frame_max(4096));
    std::string out;
    const std::string body(10 * 4096 + 17, 'b');
    REQUIRE_FALSE(w.write_content(out, 1, basic_publish{}, {}, body));
    const auto r = receive(out, 4096);
    REQUIRE_FALSE(r.error);
    REQUIRE(r.commands.size() == 1);
    CHECK(r.commands[0].body == body);
    // And a raw frame over frame_max is refused by the writer.
    CHECK(w.write_frame(out, frame_type::body, 1, std::string(4089, 'x')) ==
          errc::invalid_argument);
}

TEST_CASE("GHSA-5fp7-wg2f-hhgp: unknown frame types close, channel numbers are bounded",
          "[amqp][codec][hostile]") {
    CHECK(receive(raw_frame(4, 0, "")).error == errc::frame_error);
    CHECK(receive(raw_frame(0x41, 0, "")).error == errc::frame_error);
    // Frames on every channel up to channel_max are accepted, the next one is refused.
    std::string stream;
    for (std::uint16_t ch = 1; ch <= 2048; ++ch)
        stream += method_frame(ch, basic_ack{.delivery_tag = ch});
    const auto r = receive(stream);
    CHECK(r.error == errc::channel_error);
}

TEST_CASE("CVE-2026-79921 (GHSA-6c5v-hqjr-5xxp): body frames above frame_max are refused",
          "[amqp][codec][hostile]") {
    const auto stream = method_frame(1, deliver) + header_frame(1, 1'000'000) +
                        raw_frame(3, 1, std::string(131072 - 7, 'x'));
    CHECK(receive(stream, 131072).error == errc::frame_error);
    CHECK(receive(stream, 0).error.value() == 0); // a 1 MiB ceiling would accept that frame
}

TEST_CASE("CVE-2023-46120: a body above the maximum message size is refused at its header",
          "[amqp][codec][hostile]") {
    const auto stream = method_frame(1, deliver) + header_frame(1, 200ULL * 1024 * 1024);
    CHECK(receive(stream).error == errc::content_too_large);
    CHECK(receive(method_frame(1, deliver) + header_frame(1, 2048), 131072, 2047, 1024).error ==
          errc::content_too_large);
}

TEST_CASE("a body longer than its header declares is unexpected_frame", "[amqp][codec][hostile]") {
    const auto stream = method_frame(1, deliver) + header_frame(1, 4) + raw_frame(3, 1, "abc") +
                        raw_frame(3, 1, "de");
    CHECK(receive(stream).error == errc::unexpected_frame);
}

} // namespace unit_amqp_codec_hostile_input
