// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <random>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// The draws a fault profile is made of (swarm testing, REPRO-02): a fault kind switched on in
/// about half of the runs, then its count or its rate drawn. The profiles of `fault_profile`
/// and `saga_fault_profile` are read from these draws in a fixed order, so a seed names the
/// same profile for good: a new draw goes after the others.
class swarm_draws {
public:
    explicit swarm_draws(std::uint64_t seed)
        : rng_(seed) {}

    /// On or off, with probability 1/2.
    bool on() { return (rng_() & 1U) != 0; }
    /// 0 when off; else 1 to `hi`.
    std::uint32_t count(std::uint32_t hi) {
        return on() ? 1 + static_cast<std::uint32_t>(rng_() % hi) : 0;
    }
    /// A rate between `lo` and `hi`, in steps of a thousandth.
    double between(double lo, double hi) {
        return lo + (hi - lo) * static_cast<double>(rng_() % 1001) / 1000.0;
    }
    /// 0 when off; else a rate between `lo` and `hi`.
    double chance(double lo, double hi) { return on() ? between(lo, hi) : 0.0; }
    /// The next raw draw (a length, say: `50 + next() % 451`).
    std::uint64_t next() { return rng_(); }

private:
    std::mt19937_64 rng_;
};

} // namespace letterbox::testing::detail
