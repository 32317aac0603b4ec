// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <cstdint>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

/// The letterbox error for an AMQP reply code a peer closed a channel or connection with:
/// the `errc` whose `amqp_reply_code` it is, or `fallback` for 200 and unknown codes.
inline std::error_code error_from_reply_code(std::uint16_t code, errc fallback) noexcept {
    for (int v = static_cast<int>(errc::content_too_large);
         v <= static_cast<int>(errc::internal_error); ++v) {
        const auto e = static_cast<errc>(v);
        if (amqp_reply_code(e) == code)
            return make_error_code(e);
    }
    return make_error_code(fallback);
}

/// The reply code to close a connection with for a protocol error `ec` of the codec: its AMQP
/// reply code, or 541 (internal error) for anything that is not a protocol error.
inline std::uint16_t reply_code_for(std::error_code ec) noexcept {
    if (ec.category() == error_category())
        if (const int code = amqp_reply_code(static_cast<errc>(ec.value())); code != 0)
            return static_cast<std::uint16_t>(code);
    return 541;
}

} // namespace letterbox::amqp::detail
