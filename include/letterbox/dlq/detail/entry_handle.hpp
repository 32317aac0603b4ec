// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <boost/uuid/name_generator_sha1.hpp>
#include <boost/uuid/uuid.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq::detail {

/// Every handle starts with this; a message id (a UUID) never does.
inline constexpr std::string_view handle_prefix = "content-";

/// The namespace of the digests behind handles: 46e49b07-991c-4f94-956e-6c11dd02755b.
inline constexpr boost::uuids::uuid handle_namespace = {{0x46, 0xe4, 0x9b, 0x07, 0x99, 0x1c, 0x4f,
                                                         0x94, 0x95, 0x6e, 0x6c, 0x11, 0xdd, 0x02,
                                                         0x75, 0x5b}};

/// Feeds `text` to the digest with its length first, so that no two sequences of fields
/// serialise to the same bytes.
inline void digest_field(std::string& out, std::string_view text) {
    out += std::to_string(text.size());
    out += ':';
    out += text;
}

inline void digest_optional(std::string& out, const std::optional<std::string>& text) {
    if (!text)
        out += '-';
    else
        digest_field(out, std::string_view(*text));
}

/// The content handle of `m`: `content-` and the 32 hex digits of a name-based (SHA-1) UUID
/// of everything the message carries (type, exchange, routing key, properties, headers and
/// body) except `x-delivery-count`, which a quorum queue raises on each browse.
///
/// Two copies with the same content have the same content handle; `handle_numbering` tells
/// them apart by their order in the queue.
inline std::string content_handle(const message& m) {
    std::string bytes;
    bytes.reserve(m.body.size() + 256);
    digest_field(bytes, letterbox::to_string(m.id));
    digest_field(bytes, m.type);
    digest_field(bytes, m.exchange);
    digest_field(bytes, m.routing_key);
    const auto& p = m.properties;
    digest_optional(bytes, p.content_type);
    digest_optional(bytes, p.content_encoding);
    digest_optional(bytes, p.correlation_id);
    digest_optional(bytes, p.reply_to);
    digest_optional(bytes, p.expiration);
    digest_optional(bytes, p.timestamp ? std::optional<std::string>(std::to_string(
                                             p.timestamp->time_since_epoch().count()))
                                       : std::nullopt);
    digest_field(bytes, p.persistent ? "2" : "1");
    digest_optional(bytes, p.priority ? std::optional<std::string>(std::to_string(*p.priority))
                                      : std::nullopt);
    digest_optional(bytes, p.app_id);
    digest_optional(bytes, p.user_id);
    field_table headers = m.headers;
    headers.erase(letterbox::headers::x_delivery_count);
    nlohmann::json headers_json;
    letterbox::to_json(headers_json, headers);
    digest_field(bytes,
                 headers_json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    digest_field(bytes, m.body);

    boost::uuids::name_generator_sha1 generate(handle_namespace);
    const auto digest = generate(bytes.data(), bytes.size());
    constexpr char hex[] = "0123456789abcdef";
    std::string out(handle_prefix);
    for (const auto byte : digest) {
        out += hex[byte >> 4];
        out += hex[byte & 0x0f];
    }
    return out;
}

/// Whether `text` has the form of a handle: `content-`, 32 lower-case hex digits, and
/// optionally `-` and an occurrence number from 2 without leading zeros.
inline bool is_handle(std::string_view text) noexcept {
    if (!text.starts_with(handle_prefix))
        return false;
    text.remove_prefix(handle_prefix.size());
    if (text.size() < 32)
        return false;
    for (std::size_t i = 0; i < 32; ++i) {
        const char c = text[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    text.remove_prefix(32);
    if (text.empty())
        return true;
    if (text.size() < 2 || text.size() > 21 || text[0] != '-' || text[1] == '0')
        return false;
    for (const char c : text.substr(1))
        if (c < '0' || c > '9')
            return false;
    return text != "-1";
}

/// Numbers the entries of one scan that share a content handle, in queue order: the first
/// keeps it, the n-th gets `-n` appended. A handle therefore names exactly one entry of the
/// queue, and, because identical copies are interchangeable, acting on it acts on one copy.
class handle_numbering {
public:
    std::string next(std::string handle) {
        const auto n = ++seen_[handle];
        if (n > 1) {
            handle += '-';
            handle += std::to_string(n);
        }
        return handle;
    }

private:
    std::map<std::string, std::size_t, std::less<>> seen_{};
};

} // namespace letterbox::dlq::detail
