// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// What one named consumer did with its deliveries, since its observer was made: the totals of
/// `letterbox_metrics::consumer_observer(name)`, which `letterbox_metrics::consumers()` returns
/// and the dashboard's consumers panel shows (with a delivery rate the server works out from
/// samples of `delivered`). Each field counts the `consumer_event` kind of the same name.
struct consumer_counts {
    /// The name given to `consumer_observer(name)`: the consumer id, or its queue.
    std::string consumer{};
    std::uint64_t delivered = 0;
    std::uint64_t acked = 0;
    /// Handler failures no middleware layer decided on.
    std::uint64_t failed = 0;
    /// Rejected without requeue (the broker dead-letters them).
    std::uint64_t rejected = 0;
    /// Handler runs repeated by an in-process retry.
    std::uint64_t retried = 0;
    /// Handed back to the broker for a delayed retry.
    std::uint64_t redelivered = 0;
    /// Dead-lettered by the middleware.
    std::uint64_t dead_lettered = 0;
    /// Retry or dead-letter copies whose publish failed (the original was requeued).
    std::uint64_t forward_failed = 0;

    friend bool operator==(const consumer_counts&, const consumer_counts&) = default;
};

} // namespace letterbox::ops
