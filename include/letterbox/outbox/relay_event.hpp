// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/store_time.hpp>

#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Something an `outbox_relay` did with one row, as its observer (`relay_options::on_event`)
/// sees it: what metrics count and time. The relay's counters (`relay_counters`) say the same
/// in totals; an event also names the row and when it happened.
///
/// Example (the commit-to-confirm latency):
///
///     options.on_event = [&](const letterbox::relay_event& e) {
///         if (e.what == letterbox::relay_event::kind::confirmed)
///             latency.observe(e.at - e.record.created_at);
///     };
struct relay_event {
    enum class kind : std::uint8_t {
        /// The row's message was handed to the transport (a first attempt or a republish).
        published,
        /// The broker confirmed it and did not return it: it is stored and routed.
        confirmed,
        /// The broker returned it as unroutable (`errc::no_route`).
        returned,
        /// The broker refused it (`errc::publish_nacked`).
        nacked,
    };

    kind what;
    /// The row concerned, as the relay holds it; valid during the call only.
    const outbox_record& record;
    /// When it happened, on the relay clock's wall time (`created_at` of the row is on the same
    /// scale, so `at - record.created_at` is the time since the business commit).
    store_time at;
};

/// The name of an event kind: "published", "confirmed", "returned" or "nacked".
constexpr std::string_view to_string(relay_event::kind k) noexcept {
    switch (k) {
    case relay_event::kind::published:
        return "published";
    case relay_event::kind::confirmed:
        return "confirmed";
    case relay_event::kind::returned:
        return "returned";
    case relay_event::kind::nacked:
        return "nacked";
    }
    return "unknown";
}

} // namespace letterbox
