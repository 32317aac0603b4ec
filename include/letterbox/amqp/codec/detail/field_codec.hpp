// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/detail/wire.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/field_value_codec.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec::detail {

// The limits are public (codec/field_table.hpp); these copies keep the detail header
// self-contained without a cycle.
inline constexpr std::size_t field_depth_limit = 32;
inline constexpr std::size_t field_count_limit = 65536;

inline void encode_field_value(wire_writer& w, const field_value& v, std::size_t depth);

/// Writes a field table (`Container` = `field_table`: (shortstr name, type tag, value)*) or a
/// field array (`field_array`: (type tag, value)*) after its 32-bit byte length, at nesting
/// level `depth` (1 for a method's table).
template <class Container>
void encode_field_container(wire_writer& w, const Container& items, std::size_t depth) {
    if (depth > field_depth_limit) {
        w.fail(errc::invalid_argument);
        return;
    }
    const auto at = w.size();
    w.u32(0); // placeholder, patched below
    for (const auto& item : items) {
        if constexpr (std::is_same_v<Container, field_table>) {
            w.shortstr(item.first);
            encode_field_value(w, item.second, depth);
        } else {
            encode_field_value(w, item, depth);
        }
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

inline void encode_field_table(wire_writer& w, const field_table& t, std::size_t depth) {
    encode_field_container(w, t, depth);
}

inline void encode_field_array(wire_writer& w, const field_array& a, std::size_t depth) {
    encode_field_container(w, a, depth);
}

/// The encoding's side of `letterbox::detail::write_field_value`: big-endian integers, longstr
/// strings, nested containers with a 32-bit byte length.
struct wire_value_writer {
    wire_writer& w;
    std::size_t depth;

    void u8(std::uint8_t v) { w.u8(v); }
    void u16(std::uint16_t v) { w.u16(v); }
    void u32(std::uint32_t v) { w.u32(v); }
    void u64(std::uint64_t v) { w.u64(v); }
    void bytes(std::string_view b) { w.longstr(b); }
    void array(const field_array& a) { encode_field_array(w, a, depth + 1); }
    void table(const field_table& t) { encode_field_table(w, t, depth + 1); }
};

/// Writes the type tag and the value (letterbox/detail/field_value_codec.hpp).
inline void encode_field_value(wire_writer& w, const field_value& v, std::size_t depth) {
    wire_value_writer out{w, depth};
    letterbox::detail::write_field_value(out, v);
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

/// Reads a field table or a field array (length-prefixed, see `encode_field_container`) at
/// nesting level `depth`. Duplicate names in a table: the last value wins, in the position of
/// the first (as `field_table::set` does).
template <class Container>
Container decode_field_container(wire_reader& r, std::size_t depth, field_budget& budget) {
    Container out;
    if (depth > field_depth_limit) {
        r.fail(errc::syntax_error);
        return out;
    }
    // The length is checked against what is left before anything is read or allocated.
    wire_reader in(r.longstr());
    while (r.ok() && in.ok() && !in.empty()) {
        std::string_view name;
        if constexpr (std::is_same_v<Container, field_table>)
            name = in.shortstr();
        const auto tag = in.u8();
        if (!in.ok() || !budget.spend(in))
            break;
        auto value = decode_field_value(in, tag, depth, budget);
        if (!in.ok())
            break;
        if constexpr (std::is_same_v<Container, field_table>)
            out.set(name, std::move(value));
        else
            out.push_back(std::move(value));
    }
    if (!in.ok())
        r.fail(in.error());
    return out;
}

inline field_table decode_field_table(wire_reader& r, std::size_t depth, field_budget& budget) {
    return decode_field_container<field_table>(r, depth, budget);
}

inline field_array decode_field_array(wire_reader& r, std::size_t depth, field_budget& budget) {
    return decode_field_container<field_array>(r, depth, budget);
}

/// The encoding's side of `letterbox::detail::read_field_value`.
struct wire_value_reader {
    wire_reader& r;
    std::size_t depth;
    field_budget& budget;

    std::uint8_t u8() noexcept { return r.u8(); }
    std::uint16_t u16() noexcept { return r.u16(); }
    std::uint32_t u32() noexcept { return r.u32(); }
    std::uint64_t u64() noexcept { return r.u64(); }
    bool boolean() noexcept { return r.u8() != 0; }
    std::string_view bytes() noexcept { return r.longstr(); }
    field_array array() { return decode_field_array(r, depth + 1, budget); }
    field_table table() { return decode_field_table(r, depth + 1, budget); }
    void fail() noexcept { r.fail(errc::syntax_error); }
};

/// Reads one value of type `tag`. Unknown tags (including the spec's `U` and `L`-as-unsigned
/// readings that RabbitMQ does not use) are `errc::syntax_error`; `L` is read as a signed 64-bit
/// long, as RabbitMQ reads it.
inline field_value decode_field_value(wire_reader& r, std::uint8_t tag, std::size_t depth,
                                      field_budget& budget) {
    if (tag == 'L')
        return field_value(static_cast<std::int64_t>(r.u64()));
    wire_value_reader in{r, depth, budget};
    return letterbox::detail::read_field_value(in, tag);
}

} // namespace letterbox::amqp::codec::detail
