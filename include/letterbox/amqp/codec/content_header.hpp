// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/basic_properties.hpp>
#include <letterbox/amqp/codec/detail/field_codec.hpp>
#include <letterbox/amqp/codec/detail/wire.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// The payload of a content header frame: which class the content belongs to, the size of the
/// body that follows in body frames, and the basic properties. (The weight field is always 0
/// and is not a member.)
struct content_header {
    /// Always 60 (basic): the only class with content in 0-9-1.
    std::uint16_t class_id = 60;
    std::uint64_t body_size = 0;
    basic_properties properties{};

    friend bool operator==(const content_header&, const content_header&) = default;
};

/// Appends the payload of a content header frame for `h`: class id, weight 0, body size, one
/// property-flags word, then the present properties in flag order.
///
/// Errors (`out` is left as it was): a class id other than 60, a shortstr property longer than
/// 255 bytes or headers that cannot be encoded give `errc::invalid_argument`.
inline std::error_code encode(const content_header& h, std::string& out);

/// Decodes the payload of a content header frame.
///
/// Errors, with the reply code to close with:
/// - `errc::frame_error` (501): truncated, a property running past the payload, or bytes left
///   after the last property;
/// - `errc::syntax_error` (502): a class other than basic (60), a weight other than 0, a flag
///   bit that names no property (bits 1 and 0, the latter being the continuation bit, which 14
///   properties never need: S-AMQP-13), or a bad headers table (see `decode_field_table`).
///
/// The body size is not judged here; the `content_assembler` compares it with its limit.
inline content_header decode_content_header(std::string_view payload, std::error_code& ec);

namespace detail {

// Property-flag bits of the basic class, high bit first, in wire order.
inline constexpr std::uint16_t flag_content_type = 1U << 15U;
inline constexpr std::uint16_t flag_content_encoding = 1U << 14U;
inline constexpr std::uint16_t flag_headers = 1U << 13U;
inline constexpr std::uint16_t flag_delivery_mode = 1U << 12U;
inline constexpr std::uint16_t flag_priority = 1U << 11U;
inline constexpr std::uint16_t flag_correlation_id = 1U << 10U;
inline constexpr std::uint16_t flag_reply_to = 1U << 9U;
inline constexpr std::uint16_t flag_expiration = 1U << 8U;
inline constexpr std::uint16_t flag_message_id = 1U << 7U;
inline constexpr std::uint16_t flag_timestamp = 1U << 6U;
inline constexpr std::uint16_t flag_type = 1U << 5U;
inline constexpr std::uint16_t flag_user_id = 1U << 4U;
inline constexpr std::uint16_t flag_app_id = 1U << 3U;
inline constexpr std::uint16_t flag_cluster_id = 1U << 2U;
inline constexpr std::uint16_t unknown_flags = 0x0003;

} // namespace detail

inline std::error_code encode(const content_header& h, std::string& out) {
    if (h.class_id != 60)
        return errc::invalid_argument;
    const auto size = out.size();
    const auto& p = h.properties;
    std::uint16_t flags = 0;
    const auto flag = [&flags](bool present, std::uint16_t bit) {
        if (present)
            flags = static_cast<std::uint16_t>(flags | bit);
    };
    flag(p.content_type.has_value(), detail::flag_content_type);
    flag(p.content_encoding.has_value(), detail::flag_content_encoding);
    flag(p.headers.has_value(), detail::flag_headers);
    flag(p.delivery_mode.has_value(), detail::flag_delivery_mode);
    flag(p.priority.has_value(), detail::flag_priority);
    flag(p.correlation_id.has_value(), detail::flag_correlation_id);
    flag(p.reply_to.has_value(), detail::flag_reply_to);
    flag(p.expiration.has_value(), detail::flag_expiration);
    flag(p.message_id.has_value(), detail::flag_message_id);
    flag(p.timestamp.has_value(), detail::flag_timestamp);
    flag(p.type.has_value(), detail::flag_type);
    flag(p.user_id.has_value(), detail::flag_user_id);
    flag(p.app_id.has_value(), detail::flag_app_id);
    flag(p.cluster_id.has_value(), detail::flag_cluster_id);

    detail::wire_writer w(out);
    w.u16(h.class_id);
    w.u16(0); // weight
    w.u64(h.body_size);
    w.u16(flags);
    const auto str = [&w](const std::optional<std::string>& s) {
        if (s)
            w.shortstr(*s);
    };
    str(p.content_type);
    str(p.content_encoding);
    if (p.headers)
        detail::encode_field_table(w, *p.headers, 1);
    if (p.delivery_mode)
        w.u8(*p.delivery_mode);
    if (p.priority)
        w.u8(*p.priority);
    str(p.correlation_id);
    str(p.reply_to);
    str(p.expiration);
    str(p.message_id);
    if (p.timestamp)
        w.u64(static_cast<std::uint64_t>(p.timestamp->time_since_epoch().count()));
    str(p.type);
    str(p.user_id);
    str(p.app_id);
    str(p.cluster_id);
    if (!w.ok())
        out.resize(size);
    return w.error();
}

inline content_header decode_content_header(std::string_view payload, std::error_code& ec) {
    content_header h;
    detail::wire_reader r(payload);
    h.class_id = r.u16();
    const auto weight = r.u16();
    h.body_size = r.u64();
    const auto flags = r.u16();
    if (r.ok() && (h.class_id != 60 || weight != 0 || (flags & detail::unknown_flags) != 0))
        r.fail(errc::syntax_error);

    auto& p = h.properties;
    const auto str = [&r, flags](std::uint16_t bit, std::optional<std::string>& s) {
        if ((flags & bit) != 0 && r.ok())
            s.emplace(r.shortstr());
    };
    str(detail::flag_content_type, p.content_type);
    str(detail::flag_content_encoding, p.content_encoding);
    if ((flags & detail::flag_headers) != 0 && r.ok()) {
        detail::field_budget budget;
        p.headers = detail::decode_field_table(r, 1, budget);
    }
    if ((flags & detail::flag_delivery_mode) != 0 && r.ok())
        p.delivery_mode = r.u8();
    if ((flags & detail::flag_priority) != 0 && r.ok())
        p.priority = r.u8();
    str(detail::flag_correlation_id, p.correlation_id);
    str(detail::flag_reply_to, p.reply_to);
    str(detail::flag_expiration, p.expiration);
    str(detail::flag_message_id, p.message_id);
    if ((flags & detail::flag_timestamp) != 0 && r.ok())
        p.timestamp =
            letterbox::timestamp{std::chrono::seconds{static_cast<std::int64_t>(r.u64())}};
    str(detail::flag_type, p.type);
    str(detail::flag_user_id, p.user_id);
    str(detail::flag_app_id, p.app_id);
    str(detail::flag_cluster_id, p.cluster_id);
    if (r.ok() && !r.empty())
        r.fail(errc::frame_error);
    ec = r.error();
    if (ec)
        return {};
    return h;
}

} // namespace letterbox::amqp::codec
