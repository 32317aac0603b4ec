// SPDX-License-Identifier: BSL-1.0
#pragma once

// Helpers for the routes of server_state: the error responses they share, and the count
// parameters.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/ops/detail/responses.hpp>

#include <boost/beast/http/field.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

namespace route {

inline std::string json_string(std::string_view s) {
    return nlohmann::json(std::string(s))
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline response bad_parameter(std::string_view name, std::string_view what) {
    return error_response(status::bad_request, "bad_parameter",
                          "query parameter " + json_string(name) + ": " + std::string(what));
}

inline response method_not_allowed(std::string_view allow) {
    auto r = error_response(status::method_not_allowed, "method_not_allowed",
                            "this resource supports " + std::string(allow) + " only");
    r.set(boost::beast::http::field::allow, allow);
    return r;
}

inline response unknown_queue(const std::string& queue) {
    return error_response(status::not_found, "unknown_queue",
                          "no dead-letter queue " + json_string(queue) +
                              " is registered with this server (GET /queues lists them)");
}

/// The status and body of a failed dead-letter or store operation.
inline response operation_failed(std::error_code ec, std::string_view what) {
    if (ec == errc::not_found)
        return error_response(status::not_found, "queue_not_found",
                              std::string(what) + ": the broker has no such queue");
    return error_response(status::service_unavailable, "operation_failed",
                          std::string(what) + " failed: " + ec.message() +
                              "; nothing was lost, try again");
}

/// A decimal count in `[min, max]` (larger values are clamped to `max`).
inline std::optional<std::size_t> parse_count(std::string_view text, std::size_t min,
                                              std::size_t max) {
    std::uint64_t v = 0;
    const auto* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec == std::errc::invalid_argument || p != end)
        return std::nullopt;
    if (ec == std::errc::result_out_of_range)
        return max;
    if (v < min)
        return std::nullopt;
    return static_cast<std::size_t>(std::min<std::uint64_t>(v, max));
}

inline constexpr std::size_t max_limit = 1000;

/// A 503 that tells the client to come back: the server is busy, not broken.
inline response busy(std::string_view code, std::string message, int retry_after_seconds = 1) {
    auto r = error_response(status::service_unavailable, code, message);
    r.set(boost::beast::http::field::retry_after, std::to_string(retry_after_seconds));
    return r;
}

inline response unauthorized() {
    auto r = error_response(status::unauthorized, "unauthorized",
                            "this operation needs the header 'Authorization: Bearer <token>' "
                            "with the token configured in http_server_options::token");
    r.set(boost::beast::http::field::www_authenticate, "Bearer");
    return r;
}

} // namespace route

} // namespace letterbox::ops::detail
