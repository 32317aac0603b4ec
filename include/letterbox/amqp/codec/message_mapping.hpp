// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/basic_properties.hpp>
#include <letterbox/amqp/codec/command.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>

#include <boost/uuid/name_generator_sha1.hpp>
#include <boost/uuid/uuid.hpp>

#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

namespace letterbox::amqp::codec {

/// The header that keeps a foreign message-id: the AMQP `message-id` text of a message that
/// was not published by letterbox and is not a UUID in canonical form (a longstr).
inline constexpr std::string_view foreign_message_id_header = "x-letterbox-amqp-message-id";
/// The header that keeps the deprecated AMQP `cluster-id` property, which `message` has no
/// member for (a longstr).
inline constexpr std::string_view cluster_id_header = "x-letterbox-amqp-cluster-id";

/// The namespace of the name-based (version 5) ids letterbox derives from foreign message-ids:
/// 428d4293-342f-4c54-826e-44324e7f7544. Part of the wire contract: changing it changes the
/// ids, and so breaks deduplication.
inline constexpr boost::uuids::uuid foreign_message_id_namespace = {
    {0x42, 0x8d, 0x42, 0x93, 0x34, 0x2f, 0x4c, 0x54, 0x82, 0x6e, 0x44, 0x32, 0x4e, 0x7f, 0x75,
     0x44}};

/// The letterbox id of a message whose AMQP message-id is `text` and not a canonical UUID: the
/// version 5 UUID of `text` in `foreign_message_id_namespace`. The same text always gives the
/// same id, so the inbox deduplicates redeliveries of foreign messages too.
inline message_id foreign_message_id(std::string_view text) {
    boost::uuids::name_generator_sha1 generate(foreign_message_id_namespace);
    return generate(text.data(), text.size());
}

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

/// The message a content header carries, with `body`; `exchange` and `routing_key` are left
/// empty (see the `command` overload).
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

/// The message a content-bearing command carries (basic.deliver, basic.get-ok, basic.return,
/// basic.publish), with `exchange` and `routing_key` taken from its method. The body is moved
/// out of `c`. Errors: `errc::invalid_argument` for a command without content.
inline message to_message(command&& c, std::error_code& ec);

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

inline message to_message(command&& c, std::error_code& ec) {
    ec.clear();
    if (!c.header) {
        ec = errc::invalid_argument;
        return {};
    }
    auto m = to_message(c.header->properties, std::move(c.body));
    std::visit(
        [&m](auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (T::has_content) {
                m.exchange = std::move(x.exchange);
                m.routing_key = std::move(x.routing_key);
            }
        },
        c.method);
    return m;
}

} // namespace letterbox::amqp::codec
