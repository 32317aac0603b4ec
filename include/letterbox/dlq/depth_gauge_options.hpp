// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

/// Options of a `depth_gauge`.
struct depth_gauge_options {
    /// The time between the end of one poll and the start of the next. Must be positive.
    std::chrono::milliseconds interval{std::chrono::seconds{15}};
    /// The depth at which the queue counts as "above" (depth >= threshold). Without one, the
    /// gauge only measures.
    std::optional<std::uint32_t> threshold{};
    /// Called on the transport's executor when the depth crosses the threshold: once with
    /// `above == true` when a poll first sees `depth >= threshold`, and once with
    /// `above == false` when a later poll first sees it below again (edge-triggered, never on
    /// every poll). The gauge starts "below": a first poll below the threshold calls nothing.
    /// It must not throw.
    std::function<void(bool above, std::uint32_t depth)> on_threshold{};
};

} // namespace letterbox::dlq
