// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/store_time.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Where a projection is, as `projection_runner::stats` reads it, and what its runner did.
///
/// - `position`: the committed checkpoint (the last event applied); `head`: the event store's
///   last position. `lag_events` is `head - position`.
/// - `lag_time`: how long the oldest event not yet applied has waited (the clock's wall time
///   minus its `recorded_at`); zero when the projection is caught up.
/// - `applied` and `batches`: what this runner committed; `conflicts`: batches it rolled back
///   because another runner of the projection moved the checkpoint first; `errors`: batches or
///   rounds that failed otherwise (a store error, a projection that returned an error).
struct projection_stats {
    std::uint64_t position = 0;
    std::uint64_t head = 0;
    std::uint64_t lag_events = 0;
    store_time::duration lag_time{};
    std::uint64_t applied = 0;
    std::uint64_t batches = 0;
    std::uint64_t conflicts = 0;
    std::uint64_t errors = 0;

    friend bool operator==(const projection_stats&, const projection_stats&) = default;
};

} // namespace letterbox
