// SPDX-License-Identifier: BSL-1.0
#pragma once

// The binary encoding of message headers (an AMQP field table) and message properties in the
// `headers` and `properties` columns of the durable stores' outbox tables (SQLite BLOB,
// PostgreSQL bytea). Private to the stores; one format, so a row reads the same in both.
//
// Lossless by construction: every field type keeps its tag (so an int8 stays an int8 and a
// byte array stays bytes), strings keep arbitrary bytes, floats keep their bits, and tables
// keep their order. Layout:
//
//   headers    := ""  (the empty table)  |  0x01 table
//   table      := varint(count) { varint(len) name-bytes value }*
//   value      := tag payload, where tag is the AMQP 0-9-1 / RabbitMQ type letter:
//                 't' u8 | 'b' i8 | 'B' u8 | 's' i16 | 'u' u16 | 'I' i32 | 'i' u32 | 'l' i64 |
//                 'f' u32 bits | 'd' u64 bits | 'D' u8 scale, i32 value | 'S' varint(len) bytes |
//                 'T' i64 seconds | 'x' varint(len) bytes | 'A' varint(count) value* |
//                 'F' table | 'V' (nothing)
//   properties := 0x01 u16 flags { field }*, fields in flag-bit order, strings as
//                 varint(len) bytes, timestamp i64 seconds, priority u8
//
// Fixed-width integers are little-endian two's complement. The decoder checks every length
// against the input and limits nesting, so a damaged BLOB is reported, never overrun.

#include <letterbox/config.hpp>
#include <letterbox/detail/field_value_codec.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/message.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail::row_codec {

inline constexpr unsigned char codec_version = 1;
/// How deeply arrays and tables may nest. Deeper headers are refused when written (the decoder
/// recurses, and must not overflow the stack on a damaged BLOB either).
inline constexpr int codec_max_depth = 100;

class byte_writer {
public:
    void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
    void fixed(std::uint64_t v, int bytes) {
        for (int i = 0; i < bytes; ++i)
            u8(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void varint(std::uint64_t v) {
        while (v >= 0x80) {
            u8(static_cast<std::uint8_t>(v | 0x80));
            v >>= 7;
        }
        u8(static_cast<std::uint8_t>(v));
    }
    void bytes(std::string_view b) {
        varint(b.size());
        out_.append(b);
    }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
};

class byte_reader {
public:
    explicit byte_reader(std::string_view in) noexcept
        : in_(in) {}

    bool u8(std::uint8_t& v) noexcept {
        if (pos_ >= in_.size())
            return false;
        v = static_cast<std::uint8_t>(in_[pos_++]);
        return true;
    }
    bool fixed(std::uint64_t& v, int bytes) noexcept {
        if (in_.size() - pos_ < static_cast<std::size_t>(bytes))
            return false;
        v = 0;
        for (int i = 0; i < bytes; ++i)
            v |= std::uint64_t{static_cast<std::uint8_t>(in_[pos_++])} << (8 * i);
        return true;
    }
    bool varint(std::uint64_t& v) noexcept {
        v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            std::uint8_t b = 0;
            if (!u8(b))
                return false;
            v |= std::uint64_t{b & 0x7fU} << shift;
            if ((b & 0x80) == 0)
                return true;
        }
        return false;
    }
    bool bytes(std::string_view& b) noexcept {
        std::uint64_t n = 0;
        if (!varint(n) || n > in_.size() - pos_)
            return false;
        b = in_.substr(pos_, static_cast<std::size_t>(n));
        pos_ += static_cast<std::size_t>(n);
        return true;
    }
    /// A count of items that each take at least one byte: no larger than what is left.
    bool count(std::uint64_t& n) noexcept { return varint(n) && n <= in_.size() - pos_; }
    bool at_end() const noexcept { return pos_ == in_.size(); }

private:
    std::string_view in_;
    std::size_t pos_ = 0;
};

template <class T>
constexpr std::uint64_t as_bits(T v) noexcept {
    using U = std::make_unsigned_t<T>;
    return static_cast<std::uint64_t>(static_cast<U>(v));
}

inline bool encode_table(byte_writer& w, const field_table& t, int depth);
inline bool encode_value(byte_writer& w, const field_value& v, int depth);

/// The encoding's side of `letterbox::detail::write_field_value`: little-endian integers,
/// varint-prefixed strings, nested containers with a varint count; `ok` turns false when they
/// nest deeper than `codec_max_depth`.
struct blob_value_writer {
    byte_writer& w;
    int depth;
    bool ok = true;

    void u8(std::uint8_t v) { w.u8(v); }
    void u16(std::uint16_t v) { w.fixed(v, 2); }
    void u32(std::uint32_t v) { w.fixed(v, 4); }
    void u64(std::uint64_t v) { w.fixed(v, 8); }
    void bytes(std::string_view b) { w.bytes(b); }
    void array(const field_array& a) {
        w.varint(a.size());
        for (const auto& item : a)
            if (!(ok = encode_value(w, item, depth + 1)))
                return;
    }
    void table(const field_table& t) { ok = encode_table(w, t, depth + 1); }
};

inline bool encode_value(byte_writer& w, const field_value& v, int depth) {
    if (depth > codec_max_depth)
        return false;
    blob_value_writer out{w, depth};
    letterbox::detail::write_field_value(out, v);
    return out.ok;
}

inline bool encode_table(byte_writer& w, const field_table& t, int depth) {
    if (depth > codec_max_depth)
        return false;
    w.varint(t.size());
    for (const auto& [name, value] : t) {
        w.bytes(name);
        if (!encode_value(w, value, depth))
            return false;
    }
    return true;
}

/// The `headers` column of `t`: empty for an empty table; std::nullopt when it nests deeper
/// than `codec_max_depth`.
inline std::optional<std::string> encode_headers(const field_table& t) {
    if (t.empty())
        return std::string();
    byte_writer w;
    w.u8(codec_version);
    if (!encode_table(w, t, 0))
        return std::nullopt;
    return w.take();
}

inline bool decode_table(byte_reader& r, field_table& t, int depth);
inline bool decode_value(byte_reader& r, field_value& out, int depth);

/// The encoding's side of `letterbox::detail::read_field_value`; `ok` turns false at the first
/// thing the input does not hold (a short read, a boolean other than 0 or 1, an unknown tag,
/// nesting deeper than `codec_max_depth`).
struct blob_value_reader {
    byte_reader& r;
    int depth;
    bool ok = true;

    std::uint64_t fixed(int bytes) {
        std::uint64_t v = 0;
        ok = ok && r.fixed(v, bytes);
        return v;
    }
    std::uint64_t u8() { return fixed(1); }
    std::uint64_t u16() { return fixed(2); }
    std::uint64_t u32() { return fixed(4); }
    std::uint64_t u64() { return fixed(8); }
    bool boolean() {
        const auto b = fixed(1);
        ok = ok && b <= 1;
        return b == 1;
    }
    std::string_view bytes() {
        std::string_view b;
        ok = ok && r.bytes(b);
        return b;
    }
    field_array array() {
        field_array items;
        std::uint64_t n = 0;
        if (!(ok = ok && r.count(n)))
            return items;
        items.reserve(static_cast<std::size_t>(n));
        for (std::uint64_t i = 0; i < n && ok; ++i)
            ok = decode_value(r, items.emplace_back(), depth + 1);
        return items;
    }
    field_table table() {
        field_table nested;
        ok = ok && decode_table(r, nested, depth + 1);
        return nested;
    }
    void fail() { ok = false; }
};

inline bool decode_value(byte_reader& r, field_value& out, int depth) {
    if (depth > codec_max_depth)
        return false;
    std::uint8_t tag = 0;
    if (!r.u8(tag))
        return false;
    blob_value_reader in{r, depth};
    out = letterbox::detail::read_field_value(in, tag);
    return in.ok;
}

inline bool decode_table(byte_reader& r, field_table& t, int depth) {
    if (depth > codec_max_depth)
        return false;
    std::uint64_t n = 0;
    if (!r.count(n))
        return false;
    for (std::uint64_t i = 0; i < n; ++i) {
        std::string_view name;
        field_value value;
        if (!r.bytes(name) || !decode_value(r, value, depth))
            return false;
        if (t.contains(name))
            return false; // names are unique in a field_table
        t.set(name, std::move(value));
    }
    return true;
}

/// Decodes a `headers` column; std::nullopt if it is damaged.
inline std::optional<field_table> decode_headers(std::string_view bytes) {
    field_table t;
    if (bytes.empty())
        return t;
    byte_reader r(bytes);
    std::uint8_t version = 0;
    if (!r.u8(version) || version != codec_version || !decode_table(r, t, 0) || !r.at_end())
        return std::nullopt;
    return t;
}

namespace property_bit {
inline constexpr unsigned content_type = 1U << 0;
inline constexpr unsigned content_encoding = 1U << 1;
inline constexpr unsigned correlation_id = 1U << 2;
inline constexpr unsigned reply_to = 1U << 3;
inline constexpr unsigned expiration = 1U << 4;
inline constexpr unsigned timestamp = 1U << 5;
inline constexpr unsigned persistent = 1U << 6;
inline constexpr unsigned priority = 1U << 7;
inline constexpr unsigned app_id = 1U << 8;
inline constexpr unsigned user_id = 1U << 9;
inline constexpr unsigned all = (1U << 10) - 1;
} // namespace property_bit

/// The `properties` column of `p`.
inline std::string encode_properties(const message_properties& p) {
    unsigned flags = 0;
    flags |= p.content_type ? property_bit::content_type : 0U;
    flags |= p.content_encoding ? property_bit::content_encoding : 0U;
    flags |= p.correlation_id ? property_bit::correlation_id : 0U;
    flags |= p.reply_to ? property_bit::reply_to : 0U;
    flags |= p.expiration ? property_bit::expiration : 0U;
    flags |= p.timestamp ? property_bit::timestamp : 0U;
    flags |= p.persistent ? property_bit::persistent : 0U;
    flags |= p.priority ? property_bit::priority : 0U;
    flags |= p.app_id ? property_bit::app_id : 0U;
    flags |= p.user_id ? property_bit::user_id : 0U;
    byte_writer w;
    w.u8(codec_version);
    w.fixed(flags, 2);
    auto text = [&w](const std::optional<std::string>& s) {
        if (s)
            w.bytes(*s);
    };
    text(p.content_type);
    text(p.content_encoding);
    text(p.correlation_id);
    text(p.reply_to);
    text(p.expiration);
    if (p.timestamp)
        w.fixed(as_bits(static_cast<std::int64_t>(p.timestamp->time_since_epoch().count())), 8);
    if (p.priority)
        w.u8(*p.priority);
    text(p.app_id);
    text(p.user_id);
    return w.take();
}

/// Decodes a `properties` column; std::nullopt if it is damaged.
inline std::optional<message_properties> decode_properties(std::string_view bytes) {
    byte_reader r(bytes);
    std::uint8_t version = 0;
    std::uint64_t flags = 0;
    if (!r.u8(version) || version != codec_version || !r.fixed(flags, 2) ||
        (flags & ~std::uint64_t{property_bit::all}) != 0)
        return std::nullopt;
    message_properties p;
    bool ok = true;
    auto text = [&](unsigned bit, std::optional<std::string>& field) {
        std::string_view s;
        if (ok && (flags & bit) != 0) {
            ok = r.bytes(s);
            if (ok)
                field = std::string(s);
        }
    };
    text(property_bit::content_type, p.content_type);
    text(property_bit::content_encoding, p.content_encoding);
    text(property_bit::correlation_id, p.correlation_id);
    text(property_bit::reply_to, p.reply_to);
    text(property_bit::expiration, p.expiration);
    if (ok && (flags & property_bit::timestamp) != 0) {
        std::uint64_t bits = 0;
        ok = r.fixed(bits, 8);
        if (ok)
            p.timestamp = timestamp{std::chrono::seconds{static_cast<std::int64_t>(bits)}};
    }
    p.persistent = (flags & property_bit::persistent) != 0;
    if (ok && (flags & property_bit::priority) != 0) {
        std::uint8_t priority = 0;
        ok = r.u8(priority);
        if (ok)
            p.priority = priority;
    }
    text(property_bit::app_id, p.app_id);
    text(property_bit::user_id, p.user_id);
    if (!ok || !r.at_end())
        return std::nullopt;
    return p;
}

} // namespace letterbox::detail::row_codec
