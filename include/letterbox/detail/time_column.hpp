// SPDX-License-Identifier: BSL-1.0
#pragma once

// store_time <-> the 64-bit integer microseconds since the Unix epoch of the durable stores'
// time columns (SQLite INTEGER, PostgreSQL bigint). Private to the stores.

#include <letterbox/config.hpp>
#include <letterbox/store_time.hpp>

#include <chrono>
#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Microseconds since the epoch, rounded toward the past (so a time never moves forward).
inline std::int64_t to_column(store_time t) noexcept {
    return std::chrono::floor<std::chrono::microseconds>(t.time_since_epoch()).count();
}

/// The time a column holds, clamped to what `store_time` can represent.
inline store_time from_column(std::int64_t micros) noexcept {
    using std::chrono::microseconds;
    constexpr auto max = std::chrono::duration_cast<microseconds>(store_time::duration::max());
    constexpr auto min = std::chrono::duration_cast<microseconds>(store_time::duration::min());
    if (micros >= max.count())
        return store_time::max();
    if (micros <= min.count())
        return store_time::min();
    return store_time{std::chrono::duration_cast<store_time::duration>(microseconds{micros})};
}

} // namespace letterbox::detail
