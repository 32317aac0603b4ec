// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/detail/wire.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>

#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec::detail {

// The limits are public (codec/field_table.hpp); these copies keep the detail header
// self-contained without a cycle.
inline constexpr std::size_t field_depth_limit = 32;
inline constexpr std::size_t field_count_limit = 65536;

inline void encode_field_value(wire_writer& w, const field_value& v, std::size_t depth);

/// Writes `t` as a field table: a 32-bit byte length, then (shortstr name, type tag, value)*.
/// `depth` is the nesting level of `t` (1 for a method's table).
inline void encode_field_table(wire_writer& w, const field_table& t, std::size_t depth) {
    if (depth > field_depth_limit) {
        w.fail(errc::invalid_argument);
        return;
    }
    const auto at = w.size();
    w.u32(0); // placeholder, patched below
    for (const auto& [name, value] : t) {
        w.shortstr(name);
        encode_field_value(w, value, depth);
        if (!w.ok())
            return;
    }
    const auto length = w.size() - at - 4;
    if (length > std::numeric_limits<std::uint32_t>::max()) {
        w.fail(errc::invalid_argument);
        return;
    }
    w.patch_u32(at, static_cast<std::uint32_t>(length));
}

inline void encode_field_array(wire_writer& w, const field_array& a, std::size_t depth) {
    if (depth > field_depth_limit) {
        w.fail(errc::invalid_argument);
        return;
    }
    const auto at = w.size();
    w.u32(0);
    for (const auto& value : a) {
        encode_field_value(w, value, depth);
        if (!w.ok())
            return;
    }
    const auto length = w.size() - at - 4;
    if (length > std::numeric_limits<std::uint32_t>::max()) {
        w.fail(errc::invalid_argument);
        return;
    }
    w.patch_u32(at, static_cast<std::uint32_t>(length));
}

/// Writes the type tag and the value. The tags are RabbitMQ's (rabbit_binary_generator), not the
/// 0-9-1 spec text's: `s` is a signed 16-bit int, `u` unsigned 16, `I` signed 32, `i` unsigned 32,
/// `l` signed 64, `x` a byte array (see the RabbitMQ 0-9-1 errata).
inline void encode_field_value(wire_writer& w, const field_value& v, std::size_t depth) {
    std::visit(
        [&w, depth](const auto& x) {
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
                w.longstr(x);
            } else if constexpr (std::is_same_v<T, timestamp>) {
                w.u8('T');
                w.u64(static_cast<std::uint64_t>(x.time_since_epoch().count()));
            } else if constexpr (std::is_same_v<T, byte_array>) {
                w.u8('x');
                w.longstr(std::string_view(reinterpret_cast<const char*>(x.data()), x.size()));
            } else if constexpr (std::is_same_v<T, field_array>) {
                w.u8('A');
                encode_field_array(w, x, depth + 1);
            } else {
                static_assert(std::is_same_v<T, field_table>);
                w.u8('F');
                encode_field_table(w, x, depth + 1);
            }
        },
        v.variant());
}

/// Counts decoded values against `field_count_limit`, so that a frame full of one-byte void
/// values cannot expand into millions of `field_value`s.
struct field_budget {
    std::size_t values = 0;

    bool spend(wire_reader& r) noexcept {
        if (++values > field_count_limit) {
            r.fail(errc::syntax_error);
            return false;
        }
        return true;
    }
};

inline field_value decode_field_value(wire_reader& r, std::uint8_t tag, std::size_t depth,
                                      field_budget& budget);

/// Reads a field table (length-prefixed) at nesting level `depth`. Duplicate names: the last
/// value wins, in the position of the first (as `field_table::set` does).
inline field_table decode_field_table(wire_reader& r, std::size_t depth, field_budget& budget) {
    field_table out;
    if (depth > field_depth_limit) {
        r.fail(errc::syntax_error);
        return out;
    }
    // The length is checked against what is left before anything is read or allocated.
    wire_reader in(r.longstr());
    while (r.ok() && in.ok() && !in.empty()) {
        const auto name = in.shortstr();
        const auto tag = in.u8();
        if (!in.ok() || !budget.spend(in))
            break;
        auto value = decode_field_value(in, tag, depth, budget);
        if (!in.ok())
            break;
        out.set(name, std::move(value));
    }
    if (!in.ok())
        r.fail(in.error());
    return out;
}

inline field_array decode_field_array(wire_reader& r, std::size_t depth, field_budget& budget) {
    field_array out;
    if (depth > field_depth_limit) {
        r.fail(errc::syntax_error);
        return out;
    }
    wire_reader in(r.longstr());
    while (r.ok() && in.ok() && !in.empty()) {
        const auto tag = in.u8();
        if (!in.ok() || !budget.spend(in))
            break;
        auto value = decode_field_value(in, tag, depth, budget);
        if (!in.ok())
            break;
        out.push_back(std::move(value));
    }
    if (!in.ok())
        r.fail(in.error());
    return out;
}

/// Reads one value of type `tag`. Unknown tags (including the spec's `U` and `L`-as-unsigned
/// readings that RabbitMQ does not use) are `errc::syntax_error`; `L` is read as a signed 64-bit
/// long, as RabbitMQ reads it.
inline field_value decode_field_value(wire_reader& r, std::uint8_t tag, std::size_t depth,
                                      field_budget& budget) {
    switch (tag) {
    case 'V':
        return {};
    case 't':
        return field_value(r.u8() != 0);
    case 'b':
        return field_value(static_cast<std::int8_t>(r.u8()));
    case 'B':
        return field_value(r.u8());
    case 's':
        return field_value(static_cast<std::int16_t>(r.u16()));
    case 'u':
        return field_value(r.u16());
    case 'I':
        return field_value(static_cast<std::int32_t>(r.u32()));
    case 'i':
        return field_value(r.u32());
    case 'l':
    case 'L':
        return field_value(static_cast<std::int64_t>(r.u64()));
    case 'f':
        return field_value(std::bit_cast<float>(r.u32()));
    case 'd':
        return field_value(std::bit_cast<double>(r.u64()));
    case 'D': {
        decimal d;
        d.scale = r.u8();
        d.value = static_cast<std::int32_t>(r.u32());
        return field_value(d);
    }
    case 'S':
        return field_value(std::string(r.longstr()));
    case 'T':
        return field_value(timestamp{std::chrono::seconds{static_cast<std::int64_t>(r.u64())}});
    case 'x': {
        const auto bytes = r.longstr();
        const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
        return field_value(byte_array(p, p + bytes.size()));
    }
    case 'A':
        return field_value(decode_field_array(r, depth + 1, budget));
    case 'F':
        return field_value(decode_field_table(r, depth + 1, budget));
    default:
        r.fail(errc::syntax_error);
        return {};
    }
}

} // namespace letterbox::amqp::codec::detail
