// SPDX-License-Identifier: BSL-1.0
// libFuzzer target for the AMQP codec (research FZ-01 to FZ-04): the frame reader, the method
// and content-header decoders, the content assembler, the message mapping and the field-table
// decoder, driven by one byte stream.
//
// Input: byte 0 picks the read size (1 to 64 bytes per feed), byte 1 the limits (bits 0-1:
// frame_max 4096, 8192, 131072 or 0; bit 2: channel_max 2047 instead of none; bit 3: a 1 KiB
// body limit instead of 128 MiB); the rest is the stream a server would send after the
// handshake.
//
// Oracles (a failure aborts, which libFuzzer and the replay test report):
// - the stream read whole and read in small pieces gives the same frames and the same error;
// - no frame exceeds frame_max or channel_max, and the reader never holds more than its input;
// - every method and content header that decodes re-encodes to something that decodes to the
//   same value (compared by encoding, so NaNs count as equal), no longer than the original;
// - every command the assembler completes has a body of the declared size, writes back through
//   the frame writer within the same frame_max, and reads back as the same command;
// - its message maps to properties and back to the same message;
// - the stream decoded as a field table round-trips too.
// Build and run: docs/amqp.md, "Fuzzing".

#include <letterbox/amqp/codec.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

namespace codec = letterbox::amqp::codec;

[[noreturn]] void oracle_failed(const char* what, int line) {
    std::fprintf(stderr, "amqp_frame_fuzzer: oracle failed at line %d: %s\n", line, what);
    std::abort();
}

#define AMQP_FUZZ_CHECK(condition)                                                                 \
    do {                                                                                           \
        if (!(condition))                                                                          \
            oracle_failed(#condition, __LINE__);                                                   \
    } while (false)

struct owned_frame {
    codec::frame_type type;
    std::uint16_t channel;
    std::string payload;
    friend bool operator==(const owned_frame&, const owned_frame&) = default;
};

struct limits {
    std::uint32_t frame_max;
    std::uint16_t channel_max;
    std::uint64_t max_body_size;
};

std::vector<owned_frame> read_frames(std::string_view stream, std::size_t chunk, const limits& lim,
                                     std::error_code& ec) {
    codec::frame_reader reader;
    AMQP_FUZZ_CHECK(!reader.set_limits(lim.frame_max, lim.channel_max));
    std::vector<owned_frame> frames;
    std::size_t fed = 0;
    ec.clear();
    while (fed < stream.size() && !ec) {
        const auto n = std::min(chunk, stream.size() - fed);
        reader.feed(stream.substr(fed, n));
        fed += n;
        AMQP_FUZZ_CHECK(reader.buffered() <= fed);
        while (auto f = reader.next(ec)) {
            AMQP_FUZZ_CHECK(f->payload.size() + codec::frame_overhead <= reader.frame_max());
            AMQP_FUZZ_CHECK(f->channel <= reader.channel_max());
            frames.push_back({f->type, f->channel, std::string(f->payload)});
        }
    }
    return frames;
}

// Values are compared by their encoding: a float or double field may hold a NaN (a fuzzed `d`
// or `f` tag does), and NaN != NaN, while its bits survive the round trip exactly.
template <class T>
std::string wire(const T& value) {
    std::string out;
    AMQP_FUZZ_CHECK(!codec::encode(value, out));
    return out;
}

std::string wire(const codec::command& c) {
    std::string out = std::to_string(c.channel) + '|' + wire(c.method) + '|';
    if (c.header)
        out += wire(*c.header);
    return out + '|' + c.body;
}

std::string wire(const letterbox::message& m) {
    codec::content_header h;
    h.properties = codec::to_basic_properties(m);
    return wire(h) + '|' + m.exchange + '|' + m.routing_key + '|' + m.body;
}

void check_method(std::string_view payload) {
    std::error_code ec;
    const auto m = codec::decode_method(payload, ec);
    if (ec)
        return;
    const auto again = wire(m);
    AMQP_FUZZ_CHECK(again.size() <= payload.size());
    const auto m2 = codec::decode_method(again, ec);
    AMQP_FUZZ_CHECK(!ec);
    AMQP_FUZZ_CHECK(wire(m2) == again);
}

void check_content_header(std::string_view payload) {
    std::error_code ec;
    const auto h = codec::decode_content_header(payload, ec);
    if (ec)
        return;
    const auto again = wire(h);
    AMQP_FUZZ_CHECK(again.size() <= payload.size());
    const auto h2 = codec::decode_content_header(again, ec);
    AMQP_FUZZ_CHECK(!ec);
    AMQP_FUZZ_CHECK(wire(h2) == again);
}

void check_table(std::string_view bytes) {
    std::error_code ec;
    const auto t = codec::decode_field_table(bytes, ec);
    if (ec)
        return;
    const auto again = wire(t);
    const auto t2 = codec::decode_field_table(again, ec);
    AMQP_FUZZ_CHECK(!ec);
    AMQP_FUZZ_CHECK(wire(t2) == again);
}

/// Writes `c` back with the writer and reads it again: the same command must come out.
void check_command(const codec::command& c, const limits& lim) {
    codec::frame_writer writer;
    AMQP_FUZZ_CHECK(!writer.set_frame_max(lim.frame_max));
    std::string out;
    if (c.header) {
        AMQP_FUZZ_CHECK(c.body.size() == c.header->body_size);
        AMQP_FUZZ_CHECK(
            !writer.write_content(out, c.channel, c.method, c.header->properties, c.body));
    } else {
        AMQP_FUZZ_CHECK(!writer.write_method(out, c.channel, c.method));
    }
    std::error_code ec;
    const auto frames = read_frames(out, out.size(), lim, ec);
    AMQP_FUZZ_CHECK(!ec);
    codec::content_assembler assembler(lim.max_body_size);
    std::optional<codec::command> back;
    for (const auto& f : frames) {
        AMQP_FUZZ_CHECK(!back);
        back = assembler.feed({f.type, f.channel, f.payload}, ec);
        AMQP_FUZZ_CHECK(!ec);
    }
    AMQP_FUZZ_CHECK(back && wire(*back) == wire(c));

    if (c.header) {
        auto copy = c;
        auto m = codec::to_message(std::move(copy), ec);
        AMQP_FUZZ_CHECK(!ec);
        const auto props = codec::to_basic_properties(m);
        auto m2 = codec::to_message(props, m.body);
        m2.exchange = m.exchange;
        m2.routing_key = m.routing_key;
        AMQP_FUZZ_CHECK(wire(m2) == wire(m));
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2)
        return 0;
    static constexpr std::uint32_t frame_maxes[] = {4096, 8192, 131072, 0};
    const std::size_t chunk = (data[0] % 64U) + 1U;
    const limits lim{frame_maxes[data[1] & 3U],
                     static_cast<std::uint16_t>((data[1] & 4U) != 0 ? 2047 : 0),
                     (data[1] & 8U) != 0 ? 1024U : codec::content_assembler::default_max_body_size};
    const std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);

    std::error_code whole_error;
    const auto frames = read_frames(stream, stream.size() + 1, lim, whole_error);
    std::error_code chunked_error;
    AMQP_FUZZ_CHECK(read_frames(stream, chunk, lim, chunked_error) == frames);
    AMQP_FUZZ_CHECK(chunked_error == whole_error);

    std::map<std::uint16_t, codec::content_assembler> assemblers;
    for (const auto& f : frames) {
        if (f.type == codec::frame_type::method)
            check_method(f.payload);
        if (f.type == codec::frame_type::header)
            check_content_header(f.payload);
        auto& assembler = assemblers.try_emplace(f.channel, lim.max_body_size).first->second;
        std::error_code ec;
        if (auto c = assembler.feed({f.type, f.channel, f.payload}, ec))
            check_command(*c, lim);
        // An error resets the assembler; the rest of the frames keep exercising it.
    }
    check_table(stream);
    return 0;
}
