// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/frame.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <algorithm>
#include <cstdint>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// The frame_max to send in connection.tune-ok and to give the reader and writer: the smaller
/// of the client's limit and the server's proposal, where 0 means "no limit" and stands for
/// `frame_max_ceiling`, and nothing exceeds the ceiling. The result is never 0, so the server
/// learns the limit letterbox actually enforces.
///
/// Errors: a server proposal below `frame_min_size` (but not 0) gives `errc::syntax_error`
/// (close the connection with 502; GHSA-jh48-qjf5-fx5v); a client limit below it gives
/// `errc::invalid_argument`. The server cannot raise the client's limit (S-AMQP-02).
inline std::uint32_t negotiate_frame_max(std::uint32_t client, std::uint32_t server,
                                         std::error_code& ec) noexcept {
    ec.clear();
    if (server != 0 && server < frame_min_size) {
        ec = errc::syntax_error;
        return 0;
    }
    if (client != 0 && client < frame_min_size) {
        ec = errc::invalid_argument;
        return 0;
    }
    return std::min(effective_frame_max(client), effective_frame_max(server));
}

/// The channel_max to send in connection.tune-ok and to give the reader: the smaller of the two,
/// where 0 means "no limit" (65535). Never 0.
constexpr std::uint16_t negotiate_channel_max(std::uint16_t client, std::uint16_t server) noexcept {
    return std::min(effective_channel_max(client), effective_channel_max(server));
}

} // namespace letterbox::amqp::codec
