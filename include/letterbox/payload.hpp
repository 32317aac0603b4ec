// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/message_type.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The content type letterbox writes for JSON payloads.
inline constexpr std::string_view json_content_type = "application/json";

namespace detail {

/// `j` as compact JSON; throws `nlohmann::json::type_error` for a string that is not UTF-8.
LETTERBOX_DECL std::string dump_json_strict(const nlohmann::json& j);

/// `body` parsed as JSON, or a discarded value (`is_discarded()`) when it is not JSON.
///
/// These two are out of line: nlohmann's parser and serialiser are most of the code that
/// encoding and decoding a payload generate, and with separate compilation
/// (docs/separate-compilation.md) they are compiled once per program, not once per source file.
LETTERBOX_DECL nlohmann::json parse_json_body(std::string_view body);

} // namespace detail

/// Serialises `value` with its nlohmann `to_json` into `m.body` and sets the content type.
///
/// Returns `errc::payload_unencodable` (and leaves `m` unchanged) when the value cannot be
/// serialised, e.g. a string that is not valid UTF-8.
template <class T>
std::error_code encode_payload(message& m, const T& value) noexcept {
    try {
        m.body = detail::dump_json_strict(nlohmann::json(value));
        m.properties.content_type = std::string(json_content_type);
        return {};
    } catch (...) {
        return errc::payload_unencodable;
    }
}

namespace detail {

/// The one decoder behind both forms of `decode_payload`: `m.body` into a `T`, or
/// `std::nullopt` with `ec` set and, when `why` is given, what was wrong (the content type, or
/// the JSON decoder's own message). Throws only if writing `why` fails to allocate.
template <class T>
std::optional<T> decode_json(const message& m, std::error_code& ec, std::string* why) {
    ec.clear();
    auto refuse = [&](errc code, auto&& text) -> std::optional<T> {
        ec = code;
        if (why)
            *why = text();
        return std::nullopt;
    };
    if (m.properties.content_type && *m.properties.content_type != json_content_type)
        return refuse(errc::payload_malformed, [&] {
            return "its content type is '" + *m.properties.content_type + "', not JSON";
        });
    try {
        auto j = detail::parse_json_body(m.body);
        if (j.is_discarded())
            return refuse(errc::payload_malformed,
                          [] { return std::string("the body is not JSON"); });
        return j.template get<T>();
    } catch (const std::exception& e) {
        return refuse(errc::payload_type_mismatch, [&] { return std::string(e.what()); });
    } catch (...) {
        return refuse(errc::payload_type_mismatch,
                      [] { return std::string("its from_json threw a non-standard exception"); });
    }
}

} // namespace detail

/// Decodes `m.body` as JSON into a `T` with its nlohmann `from_json`.
///
/// Never throws and never crashes on hostile input: returns `std::nullopt` and sets `ec` to
/// `errc::payload_malformed` when the body is not JSON (or the content type says it is
/// something else), or to `errc::payload_type_mismatch` when it is JSON of the wrong shape.
/// Both are permanent failures: a retry cannot fix them, so they go to the dead-letter path.
template <class T>
std::optional<T> decode_payload(const message& m, std::error_code& ec) noexcept {
    return detail::decode_json<T>(m, ec, nullptr);
}

/// Throwing form of `decode_payload`: throws `letterbox::error` with the same codes, and a
/// text that says what is wrong (the content type, or the JSON decoder's own message).
template <class T>
T decode_payload(const message& m) {
    std::error_code ec;
    std::string why;
    auto v = detail::decode_json<T>(m, ec, &why);
    if (!v)
        throw error(ec, "cannot decode the payload of message " + boost::uuids::to_string(m.id) +
                            ": " + why);
    return std::move(*v);
}

/// Whether `content_type` names JSON: `application/json` or any `+json` structured syntax
/// suffix (RFC 6839, e.g. `application/cloudevents+json`), ignoring parameters such as
/// `; charset=utf-8` and the case of the type.
inline bool is_json_content_type(std::string_view content_type) noexcept {
    content_type = content_type.substr(0, content_type.find(';'));
    while (!content_type.empty() && (content_type.back() == ' ' || content_type.back() == '\t'))
        content_type.remove_suffix(1);
    auto iequals_suffix = [&](std::string_view suffix) {
        if (content_type.size() < suffix.size())
            return false;
        const auto tail = content_type.substr(content_type.size() - suffix.size());
        for (std::size_t i = 0; i < suffix.size(); ++i) {
            const char c = tail[i];
            const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
            if (lower != suffix[i])
                return false;
        }
        return true;
    };
    return (content_type.size() == json_content_type.size() && iequals_suffix(json_content_type)) ||
           iequals_suffix("+json");
}

/// Checks that `m.body` is valid for the content type `m` declares, before the message is
/// stored or published, so that a malformed event is refused where it is written and never
/// reaches a consumer. Today that means: a JSON content type (see `is_json_content_type`)
/// requires a body that parses as JSON. Other or absent content types are opaque bytes and
/// always pass.
///
/// Returns `errc::payload_malformed` for a body that fails its content type, else success.
LETTERBOX_DECL std::error_code validate_payload(const message& m) noexcept;

/// A message of type `type` carrying `payload` as JSON, with a fresh id from `ids`.
/// Throws `letterbox::error(errc::payload_unencodable)` when it cannot be encoded.
template <class T>
message make_message(message_id_generator& ids, std::string type, std::string exchange,
                     std::string routing_key, const T& payload) {
    message m;
    m.id = ids();
    m.type = std::move(type);
    m.exchange = std::move(exchange);
    m.routing_key = std::move(routing_key);
    if (auto ec = encode_payload(m, payload))
        throw error(ec, "cannot encode the payload of a '" + m.type + "' message");
    return m;
}

/// A message of `T`'s type (`message_type<T>::name`) carrying `payload` as JSON, with a fresh
/// id from `ids`, for `routing_key` on `exchange` (the default exchange: the queue named
/// `routing_key`). Publish it, or add it to the outbox in the unit of work of your change:
///
///     outbox.add(uow, {letterbox::make_message(ids, order_shipped{o.id}, "shipments")}, now);
///
/// Throws `letterbox::error(errc::payload_unencodable)` when it cannot be encoded.
template <named_message T>
message make_message(message_id_generator& ids, const T& payload, std::string routing_key,
                     std::string exchange = {}) {
    return make_message(ids, std::string(message_type<T>::name), std::move(exchange),
                        std::move(routing_key), payload);
}

} // namespace letterbox

#if LETTERBOX_HEADER_ONLY
#include <letterbox/impl/payload.hpp>
#endif
