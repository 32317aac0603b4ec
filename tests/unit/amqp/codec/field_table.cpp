// SPDX-License-Identifier: BSL-1.0
// Field tables and arrays: every RabbitMQ type tag, the s/u/I/i/l/L readings of the errata, and
// the limits (truncation, overrun, depth, value count).
#include <letterbox/amqp/codec/field_table.hpp>

#include "bytes.hpp"

#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <system_error>

namespace unit_amqp_codec_field_table {

using namespace letterbox::amqp::codec;
using amqp_test::bytes;
using letterbox::errc;
using letterbox::field_array;
using letterbox::field_table;
using letterbox::field_value;

namespace {

std::string encoded(const field_table& t) {
    std::string out;
    REQUIRE_FALSE(encode(t, out));
    return out;
}

field_table decoded(const std::string& wire) {
    std::error_code ec;
    auto t = decode_field_table(wire, ec);
    INFO(ec.message());
    REQUIRE_FALSE(ec);
    return t;
}

std::error_code decode_error(const std::string& wire) {
    std::error_code ec;
    (void)decode_field_table(wire, ec);
    return ec;
}

/// A table with one entry "a" whose value is the given tag and bytes.
std::string one_entry(int tag, const std::string& value) {
    const auto n = 3 + value.size();
    return bytes({0, 0, 0, static_cast<int>(n), 1, 'a', tag}) + value;
}

/// `depth` tables nested in each other ({"n": {"n": ... {}}}).
field_table nested(std::size_t depth) {
    field_table t;
    for (std::size_t level = 1; level < depth; ++level)
        t = field_table{{"n", t}};
    return t;
}

} // namespace

TEST_CASE("a table is a 32-bit length, then shortstr name, tag and value per entry",
          "[amqp][codec][field_table]") {
    const field_table t{{"a", std::int32_t{1}}};
    const auto wire = bytes({0, 0, 0, 7, 1, 'a', 'I', 0, 0, 0, 1});
    CHECK(encoded(t) == wire);
    CHECK(decoded(wire) == t);
    CHECK(encoded(field_table{}) == bytes({0, 0, 0, 0}));
}

TEST_CASE("every value type has RabbitMQ's tag and round-trips", "[amqp][codec][field_table]") {
    using letterbox::byte_array;
    using letterbox::decimal;
    using letterbox::timestamp;
    const struct {
        field_value value;
        std::string wire; // tag and value bytes
    } cases[] = {
        {field_value{}, bytes({'V'})},
        {field_value(true), bytes({'t', 1})},
        {field_value(std::int8_t{-2}), bytes({'b', 0xFE})},
        {field_value(std::uint8_t{200}), bytes({'B', 200})},
        {field_value(std::int16_t{-2}), bytes({'s', 0xFF, 0xFE})},
        {field_value(std::uint16_t{65535}), bytes({'u', 0xFF, 0xFF})},
        {field_value(std::int32_t{-2}), bytes({'I', 0xFF, 0xFF, 0xFF, 0xFE})},
        {field_value(std::uint32_t{4000000000U}), bytes({'i', 0xEE, 0x6B, 0x28, 0x00})},
        {field_value(std::int64_t{-2}),
         bytes({'l', 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE})},
        {field_value(1.5F), bytes({'f', 0x3F, 0xC0, 0x00, 0x00})},
        {field_value(-2.0), bytes({'d', 0xC0, 0, 0, 0, 0, 0, 0, 0})},
        {field_value(decimal{2, 12345}), bytes({'D', 2, 0x00, 0x00, 0x30, 0x39})},
        {field_value("hi"), bytes({'S', 0, 0, 0, 2, 'h', 'i'})},
        {field_value(timestamp{std::chrono::seconds{1700000000}}),
         bytes({'T', 0, 0, 0, 0, 0x65, 0x53, 0xF1, 0x00})},
        {field_value(byte_array{std::byte{0}, std::byte{0xCE}}), bytes({'x', 0, 0, 0, 2, 0, 0xCE})},
        {field_value(field_array{field_value(std::int8_t{1}), field_value("s")}),
         bytes({'A', 0, 0, 0, 8, 'b', 1, 'S', 0, 0, 0, 1, 's'})},
        {field_value(field_table{{"k", true}}), bytes({'F', 0, 0, 0, 4, 1, 'k', 't', 1})},
    };
    for (const auto& c : cases) {
        const field_table t{{"a", c.value}};
        const auto wire = one_entry(static_cast<unsigned char>(c.wire[0]), c.wire.substr(1));
        CHECK(encoded(t) == wire);
        CHECK(decoded(wire) == t);
    }
}

TEST_CASE("s is a signed short, u unsigned, I signed int, i unsigned, l and L signed longs",
          "[amqp][codec][field_table]") {
    // The 0-9-1 spec text reads `s` as a shortstr; RabbitMQ (and this codec) as int16.
    CHECK(decoded(one_entry('s', bytes({0x80, 0x00}))).get<std::int16_t>("a") == -32768);
    CHECK(decoded(one_entry('u', bytes({0x80, 0x00}))).get<std::uint16_t>("a") == 32768);
    CHECK(decoded(one_entry('I', bytes({0x80, 0, 0, 0}))).get<std::int32_t>("a") ==
          std::int32_t{-2147483647 - 1});
    CHECK(decoded(one_entry('i', bytes({0x80, 0, 0, 0}))).get<std::uint32_t>("a") == 2147483648U);
    CHECK(decoded(one_entry('L', bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})))
              .get<std::int64_t>("a") == -1);
    // Any non-zero octet is true.
    CHECK(decoded(one_entry('t', bytes({7}))).get<bool>("a") == true);
}

TEST_CASE("an unknown type tag is syntax_error (502)", "[amqp][codec][field_table]") {
    for (const int tag : std::initializer_list<int>{'U', 'c', 'Z', 0, 0xFF})
        CHECK(decode_error(one_entry(tag, bytes({0}))) == errc::syntax_error);
    CHECK(letterbox::amqp_reply_code(errc::syntax_error) == 502);
}

TEST_CASE("truncation and lengths that overrun their enclosing bytes are frame_error",
          "[amqp][codec][field_table]") {
    CHECK(decode_error(bytes({0, 0, 0})) == errc::frame_error);                 // no full length
    CHECK(decode_error(bytes({0, 0, 0, 5, 1, 'a'})) == errc::frame_error);      // table cut short
    CHECK(decode_error(bytes({0, 0, 0, 3, 1, 'a', 'I'})) == errc::frame_error); // value missing
    // A longstr claiming more than the table holds, and one claiming 2^32 - 1 bytes.
    CHECK(decode_error(one_entry('S', bytes({0, 0, 0, 9, 'x'}))) == errc::frame_error);
    CHECK(decode_error(one_entry('S', bytes({0xFF, 0xFF, 0xFF, 0xFF}))) == errc::frame_error);
    // A nested table longer than its parent.
    CHECK(decode_error(one_entry('F', bytes({0, 0, 0, 100}))) == errc::frame_error);
    // A name whose length octet runs past the table.
    CHECK(decode_error(bytes({0, 0, 0, 2, 9, 'a'})) == errc::frame_error);
    // Bytes after the table.
    CHECK(decode_error(bytes({0, 0, 0, 0, 0})) == errc::frame_error);
}

TEST_CASE("32 levels of nesting pass and 33 are refused on both sides",
          "[amqp][codec][field_table]") {
    CHECK(max_field_depth == 32);
    const auto ok = encoded(nested(32));
    CHECK(decoded(ok) == nested(32));
    std::string out = "keep";
    CHECK(encode(nested(33), out) == errc::invalid_argument);
    CHECK(out == "keep");
    // Arrays nested by hand: E(0) is an empty array, E(k) an array holding E(k-1).
    std::string inner = bytes({0, 0, 0, 0});
    for (int level = 0; level < 33; ++level) {
        const auto n = static_cast<int>(inner.size() + 1);
        inner = bytes({0, (n >> 16) & 0xFF, (n >> 8) & 0xFF, n & 0xFF, 'A'}) + inner;
    }
    // {"a": E(32)}: the table is level 1, E(32) to E(0) are levels 2 to 34.
    const auto wire = one_entry('A', inner.substr(5));
    CHECK(decode_error(wire) == errc::syntax_error);
}

TEST_CASE("more than max_field_count values in one table are refused",
          "[amqp][codec][field_table]") {
    // {"a": [V, V, ..., V]} with 65536 voids: 65537 values in all.
    const std::size_t voids = max_field_count;
    const auto n = static_cast<std::uint32_t>(voids);
    std::string array = bytes({static_cast<int>(n >> 24), static_cast<int>((n >> 16) & 0xFF),
                               static_cast<int>((n >> 8) & 0xFF), static_cast<int>(n & 0xFF)}) +
                        std::string(voids, 'V');
    const auto len = static_cast<std::uint32_t>(3 + array.size());
    const std::string wire =
        bytes({static_cast<int>(len >> 24), static_cast<int>((len >> 16) & 0xFF),
               static_cast<int>((len >> 8) & 0xFF), static_cast<int>(len & 0xFF), 1, 'a', 'A'}) +
        array;
    CHECK(decode_error(wire) == errc::syntax_error);
}

TEST_CASE("a duplicate name keeps the last value in the first position",
          "[amqp][codec][field_table]") {
    const auto wire = bytes({0, 0, 0, 12, 1, 'a', 'b', 1, 1, 'c', 'b', 2, 1, 'a', 'b', 3});
    const auto t = decoded(wire);
    REQUIRE(t.size() == 2);
    CHECK(t.begin()->first == "a");
    CHECK(t.get<std::int8_t>("a") == 3);
}

TEST_CASE("a name over 255 bytes is refused on encode", "[amqp][codec][field_table]") {
    std::string out;
    CHECK(encode(field_table{{std::string(256, 'n'), true}}, out) == errc::invalid_argument);
    CHECK(out.empty());
    CHECK_FALSE(encode(field_table{{std::string(255, 'n'), true}}, out));
}

} // namespace unit_amqp_codec_field_table
