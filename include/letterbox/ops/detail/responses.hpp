// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

using request = boost::beast::http::request<boost::beast::http::string_body>;
using response = boost::beast::http::response<boost::beast::http::string_body>;
using status = boost::beast::http::status;

/// A response with `body` of `content_type`; the session adds the headers every response
/// carries (`Cache-Control: no-store`, `X-Content-Type-Options: nosniff`), the version and
/// keep-alive.
inline response make_response(status s, std::string content_type, std::string body) {
    response r{s, 11};
    r.set(boost::beast::http::field::content_type, std::move(content_type));
    r.body() = std::move(body);
    return r;
}

/// `j` as `application/json`. Text that is not UTF-8 is replaced, so this never throws on it.
inline response json_response(status s, const nlohmann::json& j) {
    return make_response(s, "application/json",
                         j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

/// The error body of every 4xx and 5xx: `{"error": {"code": ..., "message": ...}}`.
inline response error_response(status s, std::string_view code, std::string_view message) {
    nlohmann::json j;
    j["error"]["code"] = code;
    j["error"]["message"] = message;
    return json_response(s, j);
}

} // namespace letterbox::ops::detail
