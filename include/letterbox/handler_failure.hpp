// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// Why a message was given up, as written in `headers::death_reason`: one of these texts.
namespace death_reason {
/// A retry policy classified the failure as permanent (an undecodable payload, ...).
inline constexpr std::string_view permanent_failure = "permanent-failure";
/// The policy's attempts ran out on a transient failure.
inline constexpr std::string_view retries_exhausted = "retries-exhausted";
/// The handler failed and no retry layer decided anything (no policy in the pipeline).
inline constexpr std::string_view handler_failed = "handler-failed";
/// The idempotent handler refused a message that has no idempotency key
/// (`errc::missing_idempotency_key`): without one the inbox cannot tell it from the others.
inline constexpr std::string_view missing_idempotency_key = "missing-idempotency-key";
/// A consumer with message groups refused a message that has no group key
/// (`errc::missing_group_key`, `group_options::on_missing_key`).
inline constexpr std::string_view missing_group_key = "missing-group-key";
/// A responder received a request without a `reply_to` address (`errc::missing_reply_to`).
inline constexpr std::string_view missing_reply_to = "missing-reply-to";
} // namespace death_reason

/// The death reason that an error carries by itself, or an empty view: the reason of a
/// failure that no retry can mend and that must be told apart from the policy's
/// `permanent-failure`. Such a failure is permanent whatever the retry policy's classifier
/// says, and the dead-letter layer records this reason: `errc::missing_idempotency_key`
/// (`death_reason::missing_idempotency_key`), `errc::missing_group_key`
/// (`death_reason::missing_group_key`) and `errc::missing_reply_to`
/// (`death_reason::missing_reply_to`).
inline std::string_view intrinsic_death_reason(const std::error_code& ec) noexcept {
    if (ec == errc::missing_idempotency_key)
        return death_reason::missing_idempotency_key;
    if (ec == errc::missing_group_key)
        return death_reason::missing_group_key;
    if (ec == errc::missing_reply_to)
        return death_reason::missing_reply_to;
    return {};
}

/// One failed attempt, as the middleware sees it on its way out of the pipeline: what went
/// wrong, how it was classified, and (once a layer gave up) why it was given up.
struct handler_failure {
    /// The failure's code: the handler's error code, the code of a thrown
    /// `std::system_error`, or `errc::handler_failed` for any other exception.
    std::error_code error = make_error_code(errc::handler_failed);
    /// The exception, when the handler threw.
    std::exception_ptr exception{};
    /// The exception's type, demangled (`std::invalid_argument`), or empty.
    std::string exception_type{};
    /// `what()` of the exception, or the error code's message.
    std::string exception_message{};
    /// A retry policy classified it as permanent: no layer retries it again.
    bool permanent = false;
    /// Why it was given up (a `death_reason`), set by the layer that gave up; empty while
    /// some outer layer may still retry it.
    std::string reason{};
    /// Broker-level attempts including this one, once the redelivery layer counted them;
    /// 0 when no layer counted.
    std::uint32_t attempts = 0;
};

} // namespace letterbox::middleware
