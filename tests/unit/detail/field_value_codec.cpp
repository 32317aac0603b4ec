// SPDX-License-Identifier: BSL-1.0
#include <letterbox/detail/field_value_codec.hpp>

#include <letterbox/field_table.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace unit_detail_field_value_codec {

namespace {

using letterbox::byte_array;
using letterbox::decimal;
using letterbox::field_array;
using letterbox::field_table;
using letterbox::field_value;
using letterbox::timestamp;

// A writer and a reader of the simplest encoding: every item a token of its own, so that a test
// can see what `write_field_value` asked for, and feed `read_field_value` the same back.
struct token {
    char kind; // '1', '2', '4', '8' (an integer of that width), 's' (bytes), 'A', 'F'
    std::uint64_t number = 0;
    std::string text{};
    field_array array{};
    field_table table{};
};

struct token_writer {
    std::vector<token> out;
    void u8(std::uint8_t v) { out.push_back({'1', v}); }
    void u16(std::uint16_t v) { out.push_back({'2', v}); }
    void u32(std::uint32_t v) { out.push_back({'4', v}); }
    void u64(std::uint64_t v) { out.push_back({'8', v}); }
    void bytes(std::string_view b) { out.push_back({'s', 0, std::string(b)}); }
    void array(const field_array& a) { out.push_back({'A', 0, {}, a}); }
    void table(const field_table& t) { out.push_back({'F', 0, {}, {}, t}); }
};

struct token_reader {
    const std::vector<token>& in;
    std::size_t at = 0;
    bool failed = false;
    const token& next(char kind) {
        static const token none{'?'};
        if (at >= in.size() || in[at].kind != kind) {
            failed = true;
            return none;
        }
        return in[at++];
    }
    std::uint64_t u8() { return next('1').number; }
    std::uint64_t u16() { return next('2').number; }
    std::uint64_t u32() { return next('4').number; }
    std::uint64_t u64() { return next('8').number; }
    bool boolean() { return next('1').number != 0; }
    std::string_view bytes() { return next('s').text; }
    field_array array() { return next('A').array; }
    field_table table() { return next('F').table; }
    void fail() { failed = true; }
};

// Writes `v`, checks its tag, reads the rest back.
field_value round_trip(const field_value& v, char tag) {
    token_writer w;
    letterbox::detail::write_field_value(w, v);
    REQUIRE(!w.out.empty());
    CHECK(w.out.front().kind == '1');
    CHECK(w.out.front().number == static_cast<unsigned char>(tag));
    const std::vector<token> payload(w.out.begin() + 1, w.out.end());
    token_reader r{payload};
    auto back = letterbox::detail::read_field_value(r, static_cast<std::uint8_t>(tag));
    CHECK(!r.failed);
    CHECK(r.at == payload.size());
    return back;
}

} // namespace

TEST_CASE("every field value alternative has its RabbitMQ tag and reads back the same",
          "[detail][field_value_codec]") {
    field_table nested;
    nested.set("k", field_value(std::int32_t{7}));
    const std::vector<std::pair<field_value, char>> cases{
        {field_value(), 'V'},
        {field_value(true), 't'},
        {field_value(std::int8_t{-5}), 'b'},
        {field_value(std::uint8_t{250}), 'B'},
        {field_value(std::int16_t{-300}), 's'},
        {field_value(std::uint16_t{65000}), 'u'},
        {field_value(std::numeric_limits<std::int32_t>::min()), 'I'},
        {field_value(std::uint32_t{4000000000U}), 'i'},
        {field_value(std::numeric_limits<std::int64_t>::min()), 'l'},
        {field_value(1.5F), 'f'},
        {field_value(-2.25), 'd'},
        {field_value(decimal{2, -12345}), 'D'},
        {field_value(std::string("a\0b", 3)), 'S'},
        {field_value(timestamp{std::chrono::seconds{-1}}), 'T'},
        {field_value(byte_array{std::byte{0}, std::byte{255}}), 'x'},
        {field_value(field_array{field_value(true), field_value(std::string("x"))}), 'A'},
        {field_value(nested), 'F'},
    };
    for (const auto& [value, tag] : cases) {
        CAPTURE(tag);
        CHECK(round_trip(value, tag) == value);
    }
}

TEST_CASE("signed values are written as their two's complement bits",
          "[detail][field_value_codec]") {
    token_writer w;
    letterbox::detail::write_field_value(w, field_value(std::int16_t{-1}));
    REQUIRE(w.out.size() == 2);
    CHECK(w.out[1].kind == '2');
    CHECK(w.out[1].number == 0xffff);
}

TEST_CASE("an unknown tag is the reader's failure", "[detail][field_value_codec]") {
    const std::vector<token> nothing;
    for (const char tag : {'U', 'L', 'z', '\0'}) {
        token_reader r{nothing};
        (void)letterbox::detail::read_field_value(r, static_cast<std::uint8_t>(tag));
        CHECK(r.failed);
    }
}

} // namespace unit_detail_field_value_codec
