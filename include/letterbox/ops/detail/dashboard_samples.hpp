// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

/// What the server samples for the dashboard, every `http_server_options::sample_interval`.
struct dashboard_sample {
    /// When, for display (`wall`) and for rates (`at`).
    std::chrono::system_clock::time_point wall{};
    std::chrono::steady_clock::time_point at{};
    /// The watched relay's lag (`relay_counters::lag`), when a relay is watched.
    std::optional<double> lag_seconds{};
    /// Each watched consumer's `delivered` count.
    std::vector<std::pair<std::string, std::uint64_t>> delivered{};
};

/// The last `capacity` samples, oldest first: a ring, so the server holds a bounded history
/// however long it runs (120 samples of 5 s by default: ten minutes).
///
/// Thread safety: none; the server uses it on its strand.
class dashboard_samples {
public:
    /// `capacity` is at least 1 (the options' check makes it at least 2).
    explicit dashboard_samples(std::size_t capacity)
        : capacity_(capacity < 1 ? 1 : capacity) {}

    /// Adds `s`, dropping the oldest sample when the ring is full.
    void push(dashboard_sample s) {
        if (ring_.size() < capacity_) {
            ring_.push_back(std::move(s));
            return;
        }
        ring_[head_] = std::move(s);
        head_ = (head_ + 1) % capacity_;
    }

    std::size_t size() const noexcept { return ring_.size(); }
    std::size_t capacity() const noexcept { return capacity_; }
    bool empty() const noexcept { return ring_.empty(); }
    /// The `i`-th sample, 0 the oldest. Precondition: `i < size()`.
    const dashboard_sample& operator[](std::size_t i) const noexcept {
        return ring_[(head_ + i) % ring_.size()];
    }

    /// The oldest sample taken at `now - window` or later: the baseline of a rate over the
    /// window; none when there is no such sample.
    const dashboard_sample* baseline(std::chrono::steady_clock::time_point now,
                                     std::chrono::steady_clock::duration window) const noexcept {
        for (std::size_t i = 0; i < size(); ++i)
            if ((*this)[i].at >= now - window && (*this)[i].at < now)
                return &(*this)[i];
        return nullptr;
    }

    /// Deliveries per second of `consumer` from `base` to `now`, when it has `count` now; a
    /// consumer the sample does not name had delivered nothing then. None when no time passed.
    static std::optional<double> rate(const dashboard_sample& base, const std::string& consumer,
                                      std::uint64_t count,
                                      std::chrono::steady_clock::time_point now) {
        const auto elapsed = std::chrono::duration<double>(now - base.at).count();
        if (!(elapsed > 0))
            return std::nullopt;
        std::uint64_t then = 0;
        for (const auto& [name, n] : base.delivered)
            if (name == consumer)
                then = n;
        // Counts never go down; a smaller one would be another consumer's, reusing a name.
        return count >= then ? static_cast<double>(count - then) / elapsed : 0.0;
    }

private:
    std::size_t capacity_;
    std::size_t head_ = 0; // the oldest sample, once the ring is full
    std::vector<dashboard_sample> ring_;
};

} // namespace letterbox::ops::detail
