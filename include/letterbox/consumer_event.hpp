// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Something a `consumer` did with one delivery, as its observer (`consumer_options::on_event`)
/// sees it: what metrics count and time. `consumer_stats` says the same in totals; an event
/// also names the delivery, the reason of a dead-lettering and how long the handler ran.
///
/// Example (dead-lettered messages by reason):
///
///     options.on_event = [&](const letterbox::consumer_event& e) {
///         if (e.what == letterbox::consumer_event::kind::dead_lettered)
///             ++by_reason[std::string(e.reason)];
///     };
struct consumer_event {
    enum class kind : std::uint8_t {
        /// A delivery arrived (once per delivery, however often it is handled).
        delivered,
        /// The handler ran once (each run, retries included); `handler_duration` is set.
        handled,
        /// Handled successfully and acknowledged.
        acked,
        /// Failed with no layer deciding; settled as `consumer_options::on_failure` says.
        failed,
        /// Failed and rejected without requeue because `on_failure` is `dead_letter` and no
        /// layer decided: the broker dead-letters it (or drops it without a dead-letter exchange).
        rejected,
        /// Run again by an in-process retry: at once, inside the retry layer, or after its
        /// delay.
        retried,
        /// Handed back to the broker for a delayed retry.
        redelivered,
        /// Dead-lettered by the middleware (`reason` is its `death_reason`).
        dead_lettered,
        /// A forward (retry or dead-letter copy) failed to publish: the original was requeued.
        forward_failed,
    };

    kind what;
    /// The delivery concerned; valid during the call only.
    const delivery& d;
    /// For `failed`, `rejected`, `retried`, `redelivered` and `dead_lettered`: why. The reason a
    /// layer gave up with (a `middleware::death_reason` text, for `dead_lettered`), or else what
    /// failed: the exception's `what()`, or the error code's message. Empty for the other
    /// kinds.
    std::string_view reason{};
    /// For `handled`: how long the run took, on the consumer's clock.
    std::chrono::nanoseconds handler_duration{0};
};

/// The name of an event kind, as metrics spell it ("delivered", "acked", ...).
constexpr std::string_view to_string(consumer_event::kind k) noexcept {
    switch (k) {
    case consumer_event::kind::delivered:
        return "delivered";
    case consumer_event::kind::handled:
        return "handled";
    case consumer_event::kind::acked:
        return "acked";
    case consumer_event::kind::failed:
        return "failed";
    case consumer_event::kind::rejected:
        return "rejected";
    case consumer_event::kind::retried:
        return "retried";
    case consumer_event::kind::redelivered:
        return "redelivered";
    case consumer_event::kind::dead_lettered:
        return "dead_lettered";
    case consumer_event::kind::forward_failed:
        return "forward_failed";
    }
    return "unknown";
}

} // namespace letterbox
