// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <atomic>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// A monotonically increasing count (a Prometheus counter), made by
/// `metrics_registry::make_counter`.
///
/// Thread safety: `add` and `value` may be called from any thread.
class counter {
public:
    counter() = default;
    counter(const counter&) = delete;
    counter& operator=(const counter&) = delete;

    /// Adds `n`, which must not be negative (a negative `n` is ignored: counters never go down).
    void add(double n = 1.0) noexcept {
        if (n > 0)
            value_.fetch_add(n, std::memory_order_relaxed);
    }
    double value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

} // namespace letterbox::ops
