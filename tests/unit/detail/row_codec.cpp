// SPDX-License-Identifier: BSL-1.0

#include <letterbox/detail/row_codec.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

namespace unit_detail_row_codec {

namespace {

namespace codec = letterbox::detail::row_codec;
using letterbox::field_array;
using letterbox::field_table;
using letterbox::field_value;

field_table every_field_type() {
    using namespace std::string_literals;
    field_table nested{{"deep", field_table{{"deeper", field_array{1, "two", nullptr}}}}};
    return field_table{
        {"void", nullptr},
        {"true", true},
        {"false", false},
        {"i8", std::int8_t{-128}},
        {"u8", std::uint8_t{255}},
        {"i16", std::int16_t{-32768}},
        {"u16", std::uint16_t{65535}},
        {"i32", std::int32_t{std::numeric_limits<std::int32_t>::min()}},
        {"u32", std::uint32_t{std::numeric_limits<std::uint32_t>::max()}},
        {"i64", std::int64_t{std::numeric_limits<std::int64_t>::min()}},
        {"float", 1.5f},
        {"double", -2.25e300},
        {"decimal", letterbox::decimal{2, -12345}},
        {"text", "bytes \0 and \xff"s},
        {"timestamp", letterbox::timestamp{std::chrono::seconds{-86400}}},
        {"bytes", letterbox::byte_array{std::byte{0}, std::byte{0xff}, std::byte{0x7f}}},
        {"array", field_array{std::int8_t{1}, std::int64_t{1}, field_array{}, field_table{}}},
        {"table", nested},
        {"", "empty name"},
    };
}

} // namespace

TEST_CASE("codec round-trips every field type exactly", "[sqlite][codec]") {
    const auto headers = every_field_type();
    const auto bytes = codec::encode_headers(headers);
    REQUIRE(bytes.has_value());
    const auto decoded = codec::decode_headers(*bytes);
    REQUIRE(decoded.has_value());
    CHECK(*decoded == headers);
    // Widths are kept: an int8 does not come back as an int64.
    CHECK(decoded->find("i8")->is<std::int8_t>());
    CHECK(decoded->find("u32")->is<std::uint32_t>());
    CHECK(decoded->find("bytes")->is<letterbox::byte_array>());
}

TEST_CASE("codec keeps the order of a table's entries", "[sqlite][codec]") {
    const field_table ab{{"a", 1}, {"b", 2}};
    const field_table ba{{"b", 2}, {"a", 1}};
    CHECK(*codec::decode_headers(*codec::encode_headers(ab)) == ab);
    CHECK(*codec::decode_headers(*codec::encode_headers(ba)) == ba);
    CHECK(*codec::encode_headers(ab) != *codec::encode_headers(ba));
}

TEST_CASE("codec stores an empty table as an empty blob", "[sqlite][codec]") {
    CHECK(codec::encode_headers(field_table{}) == std::string());
    CHECK(codec::decode_headers("") == field_table{});
}

TEST_CASE("codec round-trips every message property", "[sqlite][codec]") {
    letterbox::message_properties none;
    none.persistent = false;
    CHECK(codec::decode_properties(codec::encode_properties(none)) == none);
    CHECK(codec::decode_properties(codec::encode_properties({})) ==
          letterbox::message_properties{});

    letterbox::message_properties all;
    all.content_type = "application/json";
    all.content_encoding = "gzip";
    all.correlation_id = std::string("corr\0id", 7);
    all.reply_to = "";
    all.expiration = "60000";
    all.timestamp = letterbox::timestamp{std::chrono::seconds{1'700'000'000}};
    all.persistent = true;
    all.priority = 0;
    all.app_id = "app";
    all.user_id = "guest";
    CHECK(codec::decode_properties(codec::encode_properties(all)) == all);
}

TEST_CASE("codec refuses damaged blobs instead of reading past them", "[sqlite][codec]") {
    const auto headers = *codec::encode_headers(every_field_type());
    // Every truncation of a valid encoding is refused.
    for (std::size_t n = 1; n < headers.size(); ++n) {
        INFO("truncated to " << n << " of " << headers.size() << " bytes");
        CHECK_FALSE(codec::decode_headers(headers.substr(0, n)).has_value());
    }
    CHECK_FALSE(codec::decode_headers(headers + "x").has_value()); // trailing bytes
    CHECK_FALSE(codec::decode_headers("\x02\x00").has_value());    // unknown version
    CHECK_FALSE(codec::decode_properties("").has_value());
    CHECK_FALSE(codec::decode_properties(std::string("\x01\xff\xff", 3)).has_value()); // flags

    // A count far beyond the input is refused before anything is allocated.
    CHECK_FALSE(codec::decode_headers(std::string("\x01\xff\xff\xff\xff\x0f", 6)).has_value());

    // Random bytes never crash the decoder (ASan/UBSan watch the reads).
    std::mt19937_64 rng(20240101);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<std::size_t> length(0, 64);
    for (int i = 0; i < 2000; ++i) {
        std::string junk(length(rng), '\0');
        for (auto& c : junk)
            c = static_cast<char>(byte(rng));
        if (i % 2 == 0 && !junk.empty())
            junk[0] = '\x01'; // get past the version byte
        (void)codec::decode_headers(junk);
        (void)codec::decode_properties(junk);
    }
}

TEST_CASE("codec refuses nesting deeper than its limit, both ways", "[sqlite][codec]") {
    auto nest = [](int levels) {
        field_value v = std::int8_t{1};
        for (int i = 0; i < levels; ++i)
            v = field_array{std::move(v)};
        return field_table{{"n", std::move(v)}};
    };
    const auto deepest = nest(codec::codec_max_depth);
    const auto bytes = codec::encode_headers(deepest);
    REQUIRE(bytes.has_value());
    CHECK(codec::decode_headers(*bytes) == deepest);
    CHECK_FALSE(codec::encode_headers(nest(codec::codec_max_depth + 1)).has_value());

    // A blob nested deeper than the limit (hand-made: "A", count 1, repeated) is refused.
    std::string hostile("\x01\x01\x01n", 4);
    for (int i = 0; i < 10000; ++i)
        hostile += std::string("A\x01", 2);
    hostile += "V";
    CHECK_FALSE(codec::decode_headers(hostile).has_value());
}

} // namespace unit_detail_row_codec
