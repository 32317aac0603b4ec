// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The named points of an outbox relay's work on one row, in the order a row passes them. A
/// `relay_options::failpoint` hook is called at each one, so that a test can make the relay halt
/// there exactly as if its process died (DESIGN §3.9: crash points).
///
/// - `after_claim`: the store leased the row to this relay; nothing was published yet.
/// - `before_publish`: about to hand the row's message to the transport.
/// - `after_publish_sent`: the publish was started; its outcome is not known yet (the broker
///   may store the message even if the relay dies now).
/// - `after_confirm`: the outcome arrived (a confirm, a return or a nack), before the row is
///   settled in the store (marked published, or its failure recorded).
/// - `after_mark`: the row was marked published.
///
/// A halt at `after_publish_sent` or `after_confirm` leaves a row that was (or may have been)
/// delivered but is still pending: the next relay publishes it again, with the same message id,
/// and the consumer's inbox absorbs the duplicate.
enum class relay_point {
    after_claim,
    before_publish,
    after_publish_sent,
    after_confirm,
    after_mark,
};

/// The name of a point as written in logs and test output: "after_claim", ...
inline constexpr std::string_view to_string(relay_point p) noexcept {
    switch (p) {
    case relay_point::after_claim:
        return "after_claim";
    case relay_point::before_publish:
        return "before_publish";
    case relay_point::after_publish_sent:
        return "after_publish_sent";
    case relay_point::after_confirm:
        return "after_confirm";
    case relay_point::after_mark:
        return "after_mark";
    }
    return "unknown";
}

} // namespace letterbox
