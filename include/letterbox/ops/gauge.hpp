// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <atomic>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// A value that goes up and down (a Prometheus gauge), made by `metrics_registry::make_gauge`.
///
/// Thread safety: every member may be called from any thread.
class gauge {
public:
    gauge() = default;
    gauge(const gauge&) = delete;
    gauge& operator=(const gauge&) = delete;

    void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
    void add(double n) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
    double value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

} // namespace letterbox::ops
