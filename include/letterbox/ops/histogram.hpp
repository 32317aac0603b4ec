// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// A distribution of observed values over fixed buckets (a Prometheus histogram), made by
/// `metrics_registry::make_histogram`. Buckets are upper bounds (`le`), cumulative when
/// rendered; the `+Inf` bucket is implicit.
///
/// Thread safety: every member may be called from any thread.
class histogram {
public:
    /// What a histogram holds at one instant: `counts[i]` values were `<= bounds[i]` (not
    /// cumulative here), `count` values in all (`NaN` is never counted), summing to `sum`.
    struct snapshot {
        std::vector<double> bounds;
        std::vector<std::uint64_t> counts;
        std::uint64_t count = 0;
        double sum = 0.0;
    };

    /// Prometheus' default buckets, in seconds: 5 ms to 10 s.
    static std::vector<double> default_buckets() {
        return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0};
    }

    /// Throws `letterbox::error` (`errc::invalid_argument`) unless `bounds` are finite and
    /// strictly increasing.
    explicit histogram(std::vector<double> bounds = default_buckets())
        : bounds_(std::move(bounds))
        , counts_(bounds_.size(), 0) {
        for (std::size_t i = 0; i < bounds_.size(); ++i) {
            if (!std::isfinite(bounds_[i]) || (i > 0 && bounds_[i] <= bounds_[i - 1]))
                throw error(errc::invalid_argument,
                            "histogram buckets must be finite and strictly increasing");
        }
    }
    histogram(const histogram&) = delete;
    histogram& operator=(const histogram&) = delete;

    /// Records one value (in the histogram's unit, seconds for durations). `NaN` is ignored.
    void observe(double v) {
        if (std::isnan(v))
            return;
        const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
        std::lock_guard lock(mutex_);
        if (it != bounds_.end())
            ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
        ++count_;
        sum_ += v;
    }

    snapshot read() const {
        std::lock_guard lock(mutex_);
        return {bounds_, counts_, count_, sum_};
    }

private:
    const std::vector<double> bounds_;
    mutable std::mutex mutex_;
    std::vector<std::uint64_t> counts_;
    std::uint64_t count_ = 0;
    double sum_ = 0.0;
};

} // namespace letterbox::ops
