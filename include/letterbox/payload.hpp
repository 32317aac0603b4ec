// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/error.hpp>
#include <letterbox/message.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox {

/// The content type letterbox writes for JSON payloads.
inline constexpr std::string_view json_content_type = "application/json";

/// Serialises `value` with its nlohmann `to_json` into `m.body` and sets the content type.
///
/// Returns `errc::payload_unencodable` (and leaves `m` unchanged) when the value cannot be
/// serialised, e.g. a string that is not valid UTF-8.
template <class T>
std::error_code encode_payload(message& m, const T& value) noexcept {
    try {
        nlohmann::json j = value;
        m.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
        m.properties.content_type = std::string(json_content_type);
        return {};
    } catch (...) {
        return errc::payload_unencodable;
    }
}

/// Decodes `m.body` as JSON into a `T` with its nlohmann `from_json`.
///
/// Never throws and never crashes on hostile input: returns `std::nullopt` and sets `ec` to
/// `errc::payload_malformed` when the body is not JSON (or the content type says it is
/// something else), or to `errc::payload_type_mismatch` when it is JSON of the wrong shape.
/// Both are permanent failures: a retry cannot fix them, so they go to the dead-letter path.
template <class T>
std::optional<T> decode_payload(const message& m, std::error_code& ec) noexcept {
    ec.clear();
    if (m.properties.content_type && *m.properties.content_type != json_content_type) {
        ec = errc::payload_malformed;
        return std::nullopt;
    }
    try {
        auto j = nlohmann::json::parse(m.body, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded()) {
            ec = errc::payload_malformed;
            return std::nullopt;
        }
        return j.template get<T>();
    } catch (...) {
        ec = errc::payload_type_mismatch;
        return std::nullopt;
    }
}

/// Throwing form of `decode_payload`: throws `letterbox::error` with the same codes.
template <class T>
T decode_payload(const message& m) {
    std::error_code ec;
    auto v = decode_payload<T>(m, ec);
    if (!v)
        throw error(ec, "cannot decode the payload of message " + boost::uuids::to_string(m.id));
    return std::move(*v);
}

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

} // namespace letterbox
