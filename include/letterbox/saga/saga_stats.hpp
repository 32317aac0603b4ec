// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// What a `saga_orchestrator` has done, counted when the transactions that did it committed.
struct saga_stats {
    std::uint64_t started = 0;
    /// Instances that ended `completed`, `failed` (every completed step compensated), or
    /// parked in `compensation_failed`.
    std::uint64_t completed = 0;
    std::uint64_t failed = 0;
    std::uint64_t compensation_failed = 0;
    /// Commands sent through the outbox: steps, and compensations (retries included).
    std::uint64_t commands = 0;
    std::uint64_t compensations = 0;
    /// Timeouts that fired and moved an instance (a step's, a compensation's, a retry's).
    std::uint64_t timeouts_fired = 0;
    /// Replies and timeouts ignored: for an instance the store does not hold, for one that
    /// finished, or for a step or phase the instance is no longer in (a late reply, a reply to
    /// a compensation sent again).
    std::uint64_t unknown = 0;
    std::uint64_t for_finished = 0;
    std::uint64_t stale = 0;
    /// Rounds of `async_run_timeouts` that failed (a store error, a unit that could not begin,
    /// an exception from the definition's functions): the loop goes on at the next interval.
    std::uint64_t timeout_round_errors = 0;

    friend bool operator==(const saga_stats&, const saga_stats&) = default;
};

} // namespace letterbox
