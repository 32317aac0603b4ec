// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/inbox/inbox_retention.hpp>
#include <letterbox/store_time.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// When an inbox store purges itself (`inbox_retention`): `due(now)` is true at most once per
/// `purge_every` of store time, for one caller of many threads; the first call only starts the
/// period.
class purge_schedule {
public:
    explicit purge_schedule(inbox_retention r) noexcept
        : retention_(r) {}

    const inbox_retention& retention() const noexcept { return retention_; }

    /// The stamp before which records have expired at `now`.
    store_time horizon(store_time now) const noexcept { return now - retention_.keep; }

    /// Whether a purge is due at `now`; if so, this caller owns it and the next period starts.
    bool due(store_time now) noexcept {
        const auto t = now.time_since_epoch().count();
        auto last = last_.load(std::memory_order_relaxed);
        if (last == unset) { // the first call starts the period
            last_.compare_exchange_strong(last, t, std::memory_order_relaxed);
            return false;
        }
        const auto every = std::chrono::duration_cast<store_time::duration>(retention_.purge_every);
        if (t - last < every.count())
            return false;
        return last_.compare_exchange_strong(last, t, std::memory_order_relaxed);
    }

private:
    using rep = store_time::rep;
    static constexpr rep unset = std::numeric_limits<rep>::min();

    inbox_retention retention_;
    std::atomic<rep> last_{unset};
};

} // namespace letterbox::detail
