// SPDX-License-Identifier: BSL-1.0
#pragma once

// Which type tag goes with which `field_value` alternative, and what its payload is made of:
// the part of a field-table encoding that the AMQP wire codec (amqp/codec/detail/field_codec.hpp)
// and the SQLite stores' BLOB codec (detail/row_codec.hpp) share. The tags are RabbitMQ's
// (rabbit_binary_generator), not the 0-9-1 spec text's: `s` is a signed 16-bit int, `u`
// unsigned 16, `I` signed 32, `i` unsigned 32, `l` signed 64, `x` a byte array (see the RabbitMQ
// 0-9-1 errata). What differs between the two encodings stays with them: the byte order of a
// fixed-width integer, how a length is written, and how deep nesting may go.

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Writes the type tag of `v`, then its payload, through `w`, which provides:
///   `u8(std::uint8_t)`, `u16(std::uint16_t)`, `u32(std::uint32_t)`, `u64(std::uint64_t)`:
///       fixed-width integers (signed values are written as their two's complement bits);
///   `bytes(std::string_view)`: a length-prefixed string or byte array;
///   `array(const field_array&)`, `table(const field_table&)`: a nested container, one level
///       deeper (where the writer bounds nesting).
template <class Writer>
void write_field_value(Writer& w, const field_value& v) {
    std::visit(
        [&w](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                w.u8('V');
            } else if constexpr (std::is_same_v<T, bool>) {
                w.u8('t');
                w.u8(x ? 1 : 0);
            } else if constexpr (std::is_same_v<T, std::int8_t>) {
                w.u8('b');
                w.u8(static_cast<std::uint8_t>(x));
            } else if constexpr (std::is_same_v<T, std::uint8_t>) {
                w.u8('B');
                w.u8(x);
            } else if constexpr (std::is_same_v<T, std::int16_t>) {
                w.u8('s');
                w.u16(static_cast<std::uint16_t>(x));
            } else if constexpr (std::is_same_v<T, std::uint16_t>) {
                w.u8('u');
                w.u16(x);
            } else if constexpr (std::is_same_v<T, std::int32_t>) {
                w.u8('I');
                w.u32(static_cast<std::uint32_t>(x));
            } else if constexpr (std::is_same_v<T, std::uint32_t>) {
                w.u8('i');
                w.u32(x);
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
                w.u8('l');
                w.u64(static_cast<std::uint64_t>(x));
            } else if constexpr (std::is_same_v<T, float>) {
                w.u8('f');
                w.u32(std::bit_cast<std::uint32_t>(x));
            } else if constexpr (std::is_same_v<T, double>) {
                w.u8('d');
                w.u64(std::bit_cast<std::uint64_t>(x));
            } else if constexpr (std::is_same_v<T, decimal>) {
                w.u8('D');
                w.u8(x.scale);
                w.u32(static_cast<std::uint32_t>(x.value));
            } else if constexpr (std::is_same_v<T, std::string>) {
                w.u8('S');
                w.bytes(x);
            } else if constexpr (std::is_same_v<T, timestamp>) {
                w.u8('T');
                w.u64(static_cast<std::uint64_t>(
                    static_cast<std::int64_t>(x.time_since_epoch().count())));
            } else if constexpr (std::is_same_v<T, byte_array>) {
                w.u8('x');
                w.bytes(std::string_view(reinterpret_cast<const char*>(x.data()), x.size()));
            } else if constexpr (std::is_same_v<T, field_array>) {
                w.u8('A');
                w.array(x);
            } else {
                static_assert(std::is_same_v<T, field_table>);
                w.u8('F');
                w.table(x);
            }
        },
        v.variant());
}

/// Reads the payload of a value whose type tag, already read, is `tag`, through `r`, which
/// provides what `write_field_value`'s writer does, the other way (`u8()` ... `u64()`,
/// `bytes()` as a `std::string_view`, `array()`, `table()`), and also `boolean()` (how strict a
/// `t` payload must be is the encoding's choice) and `fail()`, called for an unknown tag. A
/// reader keeps its own failure state: what is returned after a failure is meaningless.
template <class Reader>
field_value read_field_value(Reader& r, std::uint8_t tag) {
    switch (tag) {
    case 'V':
        return {};
    case 't':
        return field_value(r.boolean());
    case 'b':
        return field_value(static_cast<std::int8_t>(r.u8()));
    case 'B':
        return field_value(static_cast<std::uint8_t>(r.u8()));
    case 's':
        return field_value(static_cast<std::int16_t>(r.u16()));
    case 'u':
        return field_value(static_cast<std::uint16_t>(r.u16()));
    case 'I':
        return field_value(static_cast<std::int32_t>(r.u32()));
    case 'i':
        return field_value(static_cast<std::uint32_t>(r.u32()));
    case 'l':
        return field_value(static_cast<std::int64_t>(r.u64()));
    case 'f':
        return field_value(std::bit_cast<float>(static_cast<std::uint32_t>(r.u32())));
    case 'd':
        return field_value(std::bit_cast<double>(static_cast<std::uint64_t>(r.u64())));
    case 'D': {
        decimal d;
        d.scale = static_cast<std::uint8_t>(r.u8());
        d.value = static_cast<std::int32_t>(r.u32());
        return field_value(d);
    }
    case 'S':
        return field_value(std::string(r.bytes()));
    case 'T':
        return field_value(timestamp{std::chrono::seconds{static_cast<std::int64_t>(r.u64())}});
    case 'x': {
        const std::string_view bytes = r.bytes();
        const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
        return field_value(byte_array(p, p + bytes.size()));
    }
    case 'A':
        return field_value(r.array());
    case 'F':
        return field_value(r.table());
    default:
        r.fail();
        return {};
    }
}

} // namespace letterbox::detail
