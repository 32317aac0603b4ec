// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>

// Duration arithmetic that stops at `milliseconds::max()` instead of overflowing, for the
// horizons of retry policies and of a set of middleware layers.
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// `a + b` for non-negative durations, or `milliseconds::max()` when the sum would overflow.
constexpr std::chrono::milliseconds saturating_add(std::chrono::milliseconds a,
                                                   std::chrono::milliseconds b) noexcept {
    constexpr auto top = std::chrono::milliseconds::max();
    return a > top - b ? top : a + b;
}

/// `d * n` for a non-negative duration, or `milliseconds::max()` when the product would
/// overflow.
constexpr std::chrono::milliseconds saturating_mul(std::chrono::milliseconds d,
                                                   std::uint32_t n) noexcept {
    constexpr auto top = std::chrono::milliseconds::max();
    if (d.count() == 0 || n == 0) {
        return std::chrono::milliseconds{0};
    }
    using rep = std::chrono::milliseconds::rep;
    return d.count() > top.count() / static_cast<rep>(n) ? top : d * static_cast<rep>(n);
}

} // namespace letterbox::detail
