// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// RabbitMQ's reply text (after `PRECONDITION_FAILED - `) when a channel's delivery was not
/// acknowledged within the consumer timeout (rabbit_channel:evaluate_consumer_timeout, the
/// same from 3.10 to 4.x): the in-memory broker writes it, and both transports recognise it.
inline std::string consumer_timeout_text(std::uint16_t channel, std::int64_t timeout_ms) {
    return "delivery acknowledgement on channel " + std::to_string(channel) +
           " timed out. Timeout value used: " + std::to_string(timeout_ms) +
           " ms. This timeout value can be configured, see consumers doc guide to learn more";
}

/// Whether a channel closed by the broker with `code` and `reply_text` (as the broker sent it,
/// `PRECONDITION_FAILED - ...`) was closed by the consumer timeout.
inline bool is_consumer_timeout(std::error_code code, std::string_view reply_text) noexcept {
    return code == make_error_code(errc::precondition_failed) &&
           reply_text.find("delivery acknowledgement on channel ") != std::string_view::npos &&
           reply_text.find(" timed out.") != std::string_view::npos;
}

} // namespace letterbox::detail
