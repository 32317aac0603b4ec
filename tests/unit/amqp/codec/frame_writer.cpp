// SPDX-License-Identifier: BSL-1.0
// The frame writer: exact frames, body splitting at frame_max - 8, all-or-nothing output.
#include <letterbox/amqp/codec/frame_writer.hpp>

#include "bytes.hpp"

#include <letterbox/amqp/codec/content_assembler.hpp>
#include <letterbox/amqp/codec/frame_reader.hpp>
#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <system_error>
#include <vector>

namespace unit_amqp_codec_frame_writer {

using namespace letterbox::amqp::codec;
using amqp_test::bytes;
using letterbox::errc;

namespace {

std::vector<frame_type> frame_types(const std::string& stream, std::uint32_t frame_max,
                                    std::vector<std::size_t>* sizes = nullptr) {
    frame_reader reader;
    REQUIRE_FALSE(reader.set_limits(frame_max, 0));
    reader.feed(stream);
    std::vector<frame_type> types;
    std::error_code ec;
    while (auto f = reader.next(ec)) {
        types.push_back(f->type);
        if (sizes != nullptr)
            sizes->push_back(f->payload.size());
    }
    REQUIRE_FALSE(ec);
    REQUIRE(reader.buffered() == 0);
    return types;
}

} // namespace

TEST_CASE("a heartbeat is 08 0000 00000000 CE and the protocol header AMQP 0 0 9 1",
          "[amqp][codec][frame_writer]") {
    frame_writer writer;
    std::string out;
    frame_writer::write_protocol_header(out);
    writer.write_heartbeat(out);
    CHECK(out == bytes({'A', 'M', 'Q', 'P', 0, 0, 9, 1, 0x08, 0, 0, 0, 0, 0, 0, 0xCE}));
}

TEST_CASE("a method frame wraps the method payload with type 1, channel, size and 0xCE",
          "[amqp][codec][frame_writer]") {
    frame_writer writer;
    std::string out;
    REQUIRE_FALSE(writer.write_method(out, 1, channel_open{}));
    CHECK(out ==
          bytes({0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x14, 0x00, 0x0A, 0x00, 0xCE}));
}

TEST_CASE("a body is split into frames of at most frame_max - 8 bytes",
          "[amqp][codec][frame_writer]") {
    frame_writer writer;
    REQUIRE_FALSE(writer.set_frame_max(4096));
    const auto max = writer.max_payload();
    CHECK(max == 4088);
    const basic_publish publish{.exchange = "", .routing_key = "q"};
    struct expectation {
        std::size_t body;
        std::vector<std::size_t> body_frames;
    };
    for (const auto& e : {expectation{0, {}}, expectation{1, {1}}, expectation{max, {max}},
                          expectation{max + 1, {max, 1}}, expectation{3 * max, {max, max, max}}}) {
        std::string out;
        REQUIRE_FALSE(
            writer.write_content(out, 1, publish, basic_properties{}, std::string(e.body, 'b')));
        std::vector<std::size_t> sizes;
        const auto types = frame_types(out, 4096, &sizes);
        REQUIRE(types.size() == 2 + e.body_frames.size());
        CHECK(types[0] == frame_type::method);
        CHECK(types[1] == frame_type::header);
        CHECK(std::vector<std::size_t>(sizes.begin() + 2, sizes.end()) == e.body_frames);
    }
}

TEST_CASE("written content reassembles into the same command", "[amqp][codec][frame_writer]") {
    frame_writer writer;
    REQUIRE_FALSE(writer.set_frame_max(4096));
    basic_properties props;
    props.content_type = "application/json";
    props.delivery_mode = 2;
    props.headers = letterbox::field_table{{"x-letterbox-attempts", std::int64_t{2}}};
    const std::string body(10000, 'z');
    const basic_deliver deliver{.consumer_tag = "c1", .delivery_tag = 9, .routing_key = "k"};
    std::string out;
    REQUIRE_FALSE(writer.write_content(out, 7, deliver, props, body));

    frame_reader reader;
    REQUIRE_FALSE(reader.set_limits(4096, 0));
    reader.feed(out);
    content_assembler assembler;
    std::error_code ec;
    std::optional<command> cmd;
    while (auto f = reader.next(ec)) {
        REQUIRE_FALSE(cmd);
        cmd = assembler.feed(*f, ec);
        REQUIRE_FALSE(ec);
    }
    REQUIRE(cmd);
    CHECK(cmd->channel == 7);
    CHECK(cmd->method == method(deliver));
    REQUIRE(cmd->header);
    CHECK(cmd->header->body_size == body.size());
    CHECK(cmd->header->properties == props);
    CHECK(cmd->body == body);
}

TEST_CASE("a method or header larger than frame_max is refused and nothing is written",
          "[amqp][codec][frame_writer]") {
    frame_writer writer;
    queue_declare big;
    big.queue = "q";
    big.arguments.set("x-big", std::string(5000, 'a'));
    std::string out = "queued";
    CHECK(writer.write_method(out, 1, big) == errc::invalid_argument);
    CHECK(out == "queued");

    basic_properties props;
    props.headers = letterbox::field_table{{"h", std::string(5000, 'a')}};
    CHECK(writer.write_content(out, 1, basic_publish{}, props, "body") == errc::invalid_argument);
    CHECK(out == "queued"); // not even the method frame stays

    CHECK(writer.write_content(out, 1, basic_ack{}, {}, "x") == errc::invalid_argument);
    CHECK(writer.write_frame(out, frame_type::body, 1, std::string(4089, 'x')) ==
          errc::invalid_argument);
    CHECK(out == "queued");
    // With a larger frame_max the same method fits.
    REQUIRE_FALSE(writer.set_frame_max(0));
    CHECK_FALSE(writer.write_method(out, 1, big));
}

TEST_CASE("a frame_max below 4096 is refused", "[amqp][codec][frame_writer]") {
    frame_writer writer;
    CHECK(writer.set_frame_max(4095) == errc::invalid_argument);
    CHECK(writer.frame_max() == frame_min_size);
    CHECK_FALSE(writer.set_frame_max(131072));
    CHECK(writer.frame_max() == 131072);
}

} // namespace unit_amqp_codec_frame_writer
