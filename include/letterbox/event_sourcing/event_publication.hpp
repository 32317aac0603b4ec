// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Which appended events a `publishing_event_store` also adds to the outbox, and where the
/// relay publishes them. Opt-in: with no stream prefix and no type, nothing is published.
///
/// An event is published when its stream starts with one of `stream_prefixes` (`"account-"`
/// publishes every account's events) or its type is one of `types`. Its message goes to
/// `exchange` with the event's type as routing key; its outbox aggregate is
/// (`aggregate_type`, the stream), so the relay publishes one stream's events in order.
struct event_publication {
    std::string exchange{};
    std::vector<std::string> stream_prefixes{};
    std::vector<std::string> types{};
    std::string aggregate_type = "event-stream";

    /// Whether an event of `type` appended to `stream` is published.
    bool publishes(std::string_view stream, std::string_view type) const {
        return std::any_of(stream_prefixes.begin(), stream_prefixes.end(),
                           [&](const std::string& p) { return stream.starts_with(p); }) ||
               std::find(types.begin(), types.end(), type) != types.end();
    }
};

} // namespace letterbox
