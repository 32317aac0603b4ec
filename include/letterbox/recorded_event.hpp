// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>

#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// One event as an `event_store` gives it back: what was appended (`event_data`'s fields),
/// plus where and when the store put it.
///
/// - `stream` is the stream it was appended to.
/// - `version` is its place in that stream: 1 for the stream's first event, then one more for
///   each event, without gaps.
/// - `position` is its place among all the store's events: 1 for the first, then one more for
///   each, without gaps, in the order their appends committed.
/// - `recorded_at` is the time the append was given, or the latest time already recorded if
///   that is later: times never decrease along positions.
struct recorded_event {
    std::string stream{};
    std::uint64_t version = 0;
    std::uint64_t position = 0;
    message_id id{};
    std::string type{};
    std::string data{};
    std::string metadata{};
    store_time recorded_at{};

    friend bool operator==(const recorded_event&, const recorded_event&) = default;
};

} // namespace letterbox
