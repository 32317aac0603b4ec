// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/detail/field_codec.hpp>
#include <letterbox/amqp/codec/detail/wire.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// How deeply tables and arrays may nest: a method's own table is level 1, a table inside it
/// level 2, and so on. Deeper input is `errc::syntax_error` on decode (before descending, so the
/// stack stays bounded) and `errc::invalid_argument` on encode.
inline constexpr std::size_t max_field_depth = detail::field_depth_limit;

/// How many values (table entries and array elements, at every level) one decoded table may
/// hold; more is `errc::syntax_error`. The byte size of a table is bounded by its frame
/// (frame_max); this bounds the memory it expands into (each value is a `field_value`).
inline constexpr std::size_t max_field_count = detail::field_count_limit;

/// Appends `table` in the AMQP field-table encoding: a 32-bit byte length, then for each entry
/// a shortstr name, a type tag and the value.
///
/// Type tags, per value type (RabbitMQ's reading of the 0-9-1 errata): void `V`, bool `t`,
/// int8 `b`, uint8 `B`, int16 `s`, uint16 `u`, int32 `I`, uint32 `i`, int64 `l`, float `f`,
/// double `d`, decimal `D`, string `S` (longstr), timestamp `T`, byte array `x`, array `A`,
/// table `F`.
///
/// Errors (`out` is left as it was): a name longer than 255 bytes, nesting deeper than
/// `max_field_depth`, or a table or string longer than 2^32 - 1 bytes give
/// `errc::invalid_argument`.
inline std::error_code encode(const field_table& table, std::string& out) {
    const auto size = out.size();
    detail::wire_writer w(out);
    detail::encode_field_table(w, table, 1);
    if (!w.ok())
        out.resize(size);
    return w.error();
}

/// Decodes one field table: `encoded` holds its 32-bit length and exactly that many bytes.
///
/// Every tag RabbitMQ writes is read (`t b B s u I i l L f d D S T x A F V`; `L` as a signed
/// 64-bit long, as RabbitMQ does). A duplicate name keeps the last value, in the first one's
/// position.
///
/// Errors: a length running past its enclosing bytes, truncation, or bytes after the table give
/// `errc::frame_error`; an unknown type tag, nesting deeper than `max_field_depth` or more than
/// `max_field_count` values give `errc::syntax_error`. The result is empty on error. No length
/// is trusted: each is compared with the bytes actually left before anything is allocated.
inline field_table decode_field_table(std::string_view encoded, std::error_code& ec) {
    detail::wire_reader r(encoded);
    detail::field_budget budget;
    auto table = detail::decode_field_table(r, 1, budget);
    if (r.ok() && !r.empty())
        r.fail(errc::frame_error);
    ec = r.error();
    if (ec)
        return {};
    return table;
}

} // namespace letterbox::amqp::codec
