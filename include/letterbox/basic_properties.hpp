// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/foreign_message_id.hpp>
#include <letterbox/message.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The 14 properties of the AMQP 0-9-1 basic class, exactly as a publisher sends them in a
/// content header: each is present or absent, and nothing is interpreted.
///
/// This is the form in which a message from *any* publisher (a Node.js `sendToQueue`, an
/// aio-pika `Message`, letterbox itself) reaches a broker, so it is the one input both
/// transports accept from a foreign publisher: `amqp::codec` reads and writes it on the wire,
/// and the in-memory broker's `channel::basic_publish` takes it to play that publisher.
/// `to_message` and `to_basic_properties` translate it to and from a `letterbox::message`, one
/// definition for both transports, so the same publish gives the same `message` on either.
///
/// In a content header's property-flags word, bit 15 is `content_type`, bit 14
/// `content_encoding`, and so on down to bit 2 for `cluster_id`, in member order.
struct basic_properties {
    std::optional<std::string> content_type{};
    std::optional<std::string> content_encoding{};
    std::optional<field_table> headers{};
    /// 1 transient, 2 persistent (RabbitMQ treats anything but 2 as transient).
    std::optional<std::uint8_t> delivery_mode{};
    std::optional<std::uint8_t> priority{};
    std::optional<std::string> correlation_id{};
    std::optional<std::string> reply_to{};
    /// Per-message TTL in milliseconds, as decimal text.
    std::optional<std::string> expiration{};
    std::optional<std::string> message_id{};
    std::optional<letterbox::timestamp> timestamp{};
    std::optional<std::string> type{};
    std::optional<std::string> user_id{};
    std::optional<std::string> app_id{};
    /// Deprecated in 0-9-1; kept so that nothing a peer sends is lost.
    std::optional<std::string> cluster_id{};

    friend bool operator==(const basic_properties&, const basic_properties&) = default;
};

/// The header that keeps the deprecated AMQP `cluster-id` property, which `message` has no
/// member for (a longstr).
inline constexpr std::string_view cluster_id_header = "x-letterbox-amqp-cluster-id";

/// The basic properties to publish `m` with.
///
/// - `message-id`: the id in canonical text (none for the nil id); but when `m` carries
///   `foreign_message_id_header` and its id is `foreign_message_id` of that text, the original
///   text is sent instead and the header is left out, so a foreign message that letterbox
///   republishes (retry, dead-letter, replay) keeps its wire id.
/// - `type`: `m.type`, absent when empty. `headers`: `m.headers`, absent when empty, without
///   `cluster_id_header`, whose text becomes `cluster-id`.
/// - `delivery-mode`: 2 when `m.properties.persistent`, else 1. The other properties are copied.
inline basic_properties to_basic_properties(const message& m);

/// The message that properties `p` and `body` make; `exchange` and `routing_key` are left
/// empty (the method that carried them says where the message was published).
///
/// - `message-id`: a UUID in canonical (lower-case) text becomes `id`. Any other text (a
///   foreign publisher's "order-42", an upper-case UUID) is kept, not refused: `id` becomes
///   `foreign_message_id(text)` and the text goes into the header
///   `foreign_message_id_header` (unless the headers already hold that name). No message-id
///   gives the nil id.
/// - `delivery-mode` 2 makes `persistent` true; 1, any other value or none make it false (as
///   RabbitMQ reads it).
/// - `cluster-id` goes into the header `cluster_id_header`.
///
/// `to_basic_properties(to_message(p, body))` gives `p` back, except for what the message
/// cannot tell apart: an empty `type` or header table and an absent one, and delivery modes
/// other than 1 and 2. `to_message(to_basic_properties(m), m.body)` gives `m` back, apart from
/// `exchange` and `routing_key` (and a `foreign_message_id_header` or `cluster_id_header` entry
/// that the properties carried moves to the end of the headers).
inline message to_message(const basic_properties& p, std::string body);

/// Whether the header `name` of `m` travels as a header when `m` is published: false for the
/// two headers that `to_basic_properties` turns back into properties (a
/// `foreign_message_id_header` that names `m`'s own id, and a text `cluster_id_header`). A
/// broker model uses it to see the headers a real broker would see.
inline bool is_wire_header(const message& m, std::string_view name);

inline basic_properties to_basic_properties(const message& m) {
    basic_properties p;
    const auto& mp = m.properties;
    p.content_type = mp.content_type;
    p.content_encoding = mp.content_encoding;
    p.delivery_mode = mp.persistent ? std::uint8_t{2} : std::uint8_t{1};
    p.priority = mp.priority;
    p.correlation_id = mp.correlation_id;
    p.reply_to = mp.reply_to;
    p.expiration = mp.expiration;
    p.timestamp = mp.timestamp;
    if (!m.type.empty())
        p.type = m.type;
    p.user_id = mp.user_id;
    p.app_id = mp.app_id;

    field_table headers = m.headers;
    const auto* foreign = m.headers.find(foreign_message_id_header);
    const auto* foreign_text = foreign != nullptr ? foreign->get_if<std::string>() : nullptr;
    if (foreign_text != nullptr && foreign_message_id(*foreign_text) == m.id) {
        p.message_id = *foreign_text;
        headers.erase(foreign_message_id_header);
    } else if (!m.id.is_nil()) {
        p.message_id = letterbox::to_string(m.id);
    }
    if (const auto* cluster = m.headers.find(cluster_id_header)) {
        if (const auto* text = cluster->get_if<std::string>()) {
            p.cluster_id = *text;
            headers.erase(cluster_id_header);
        }
    }
    if (!headers.empty())
        p.headers = std::move(headers);
    return p;
}

inline message to_message(const basic_properties& p, std::string body) {
    message m;
    auto& mp = m.properties;
    mp.content_type = p.content_type;
    mp.content_encoding = p.content_encoding;
    mp.persistent = p.delivery_mode == std::uint8_t{2};
    mp.priority = p.priority;
    mp.correlation_id = p.correlation_id;
    mp.reply_to = p.reply_to;
    mp.expiration = p.expiration;
    mp.timestamp = p.timestamp;
    mp.user_id = p.user_id;
    mp.app_id = p.app_id;
    m.type = p.type.value_or(std::string{});
    if (p.headers)
        m.headers = *p.headers;
    if (p.message_id) {
        const auto parsed = parse_message_id(*p.message_id);
        if (parsed && letterbox::to_string(*parsed) == *p.message_id) {
            m.id = *parsed;
        } else {
            m.id = foreign_message_id(*p.message_id);
            if (!m.headers.contains(foreign_message_id_header))
                m.headers.set(foreign_message_id_header, *p.message_id);
        }
    }
    if (p.cluster_id && !m.headers.contains(cluster_id_header))
        m.headers.set(cluster_id_header, *p.cluster_id);
    m.body = std::move(body);
    return m;
}

inline bool is_wire_header(const message& m, std::string_view name) {
    if (name == foreign_message_id_header) {
        const auto* v = m.headers.find(name);
        const auto* text = v != nullptr ? v->get_if<std::string>() : nullptr;
        return text == nullptr || foreign_message_id(*text) != m.id;
    }
    if (name == cluster_id_header) {
        const auto* v = m.headers.find(name);
        return v == nullptr || v->get_if<std::string>() == nullptr;
    }
    return true;
}

} // namespace letterbox
