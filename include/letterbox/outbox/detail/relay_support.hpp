// SPDX-License-Identifier: BSL-1.0
#pragma once

// Private helpers of outbox_relay: counter cells, error classification, back-off arithmetic,
// option checks.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/outbox/relay_counters.hpp>
#include <letterbox/outbox/relay_options.hpp>
#include <letterbox/store_time.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// The relay's counters, written on its executor and read from any thread.
struct relay_counter_cells {
    using cell = std::atomic<std::uint64_t>;
    cell claims{0}, claimed{0}, publish_attempts{0}, published{0}, returned{0}, nacked{0},
        failed{0}, parked{0}, transport_failures{0}, backoffs{0}, store_errors{0}, lease_lost{0},
        leases_expired{0}, abandoned{0}, purged{0};
    std::atomic<std::size_t> in_flight{0}, max_in_flight{0};
    std::atomic<store_time::rep> lag{0};

    static void add(cell& c, std::uint64_t n = 1) noexcept {
        c.fetch_add(n, std::memory_order_relaxed);
    }

    void set_in_flight(std::size_t n) noexcept {
        in_flight.store(n, std::memory_order_relaxed);
        if (n > max_in_flight.load(std::memory_order_relaxed))
            max_in_flight.store(n, std::memory_order_relaxed);
    }

    relay_counters snapshot() const noexcept {
        auto get = [](const auto& c) {
            return c.load(std::memory_order_relaxed);
        };
        relay_counters r;
        r.claims = get(claims);
        r.claimed = get(claimed);
        r.publish_attempts = get(publish_attempts);
        r.published = get(published);
        r.returned = get(returned);
        r.nacked = get(nacked);
        r.failed = get(failed);
        r.parked = get(parked);
        r.transport_failures = get(transport_failures);
        r.backoffs = get(backoffs);
        r.store_errors = get(store_errors);
        r.lease_lost = get(lease_lost);
        r.leases_expired = get(leases_expired);
        r.abandoned = get(abandoned);
        r.purged = get(purged);
        r.in_flight = get(in_flight);
        r.max_in_flight = get(max_in_flight);
        r.lag = store_time::duration(get(lag));
        return r;
    }
};

/// The text recorded as a failed row's `last_error` (and as its reason when it is parked).
inline std::string failure_reason(const std::error_code& ec) {
    return "publish failed: " + ec.message() + " (" + ec.category().name() + ":" +
           std::to_string(ec.value()) + ")";
}

/// The k-th wait (k >= 1) of `b`, shortened by `u * jitter` of itself (`u` in [0, 1)).
inline std::chrono::nanoseconds backoff_wait(const relay_options::backoff& b, std::uint32_t k,
                                             double u) {
    const double initial = std::chrono::duration<double, std::nano>(b.initial).count();
    const double max = std::chrono::duration<double, std::nano>(b.max).count();
    // Stop multiplying once past the cap: no overflow however many attempts there were.
    double wait = initial;
    for (std::uint32_t i = 1; i < k && wait < max; ++i)
        wait *= b.multiplier;
    wait = std::min(wait, max) * (1.0 - b.jitter * u);
    return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(std::ceil(wait)));
}

/// Uniform numbers in [0, 1) for the jitter, from a seedable engine (the same seed gives the
/// same waits on every platform: no std::uniform_real_distribution).
class jitter_source {
public:
    explicit jitter_source(std::uint64_t seed)
        : engine_(seed) {}
    double next() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

private:
    std::mt19937_64 engine_;
};

inline std::uint64_t random_seed() {
    std::random_device rd;
    return (std::uint64_t{rd()} << 32) ^ rd();
}

/// Throws `letterbox::error(errc::precondition_failed)` naming the first invalid field.
inline void check_relay_options(const relay_options& o) {
    auto require = [](bool ok, const std::string& what) {
        if (!ok)
            throw error(errc::precondition_failed, "relay_options: " + what);
    };
    auto check_backoff = [&](const relay_options::backoff& b, const std::string& name) {
        require(b.initial.count() > 0, name + ".initial must be greater than zero");
        require(b.multiplier >= 1.0, name + ".multiplier must be at least 1");
        require(b.max >= b.initial, name + ".max must be at least .initial");
        // Waits become clock deadlines in nanoseconds: keep them far from overflowing.
        require(b.max <= std::chrono::hours(24 * 365), name + ".max must be at most a year");
        require(b.jitter >= 0.0 && b.jitter < 1.0, name + ".jitter must be in [0, 1)");
    };
    require(!o.owner.empty(), "owner must not be empty");
    require(o.batch_size >= 1, "batch_size must be at least 1");
    require(o.window >= 1, "window must be at least 1");
    constexpr auto year = std::chrono::hours(24 * 365);
    require(o.lease.count() > 0 && o.lease <= year, "lease must be in (0, a year]");
    require(o.poll_interval.count() > 0 && o.poll_interval <= year,
            "poll_interval must be in (0, a year]");
    require(o.max_attempts >= 1, "max_attempts must be at least 1");
    require(o.stop_timeout.count() >= 0 && o.stop_timeout <= year,
            "stop_timeout must be in [0, a year]");
    require(!o.retention || o.retention->count() >= 0, "retention must not be negative");
    require(o.purge_interval.count() > 0 && o.purge_interval <= year,
            "purge_interval must be in (0, a year]");
    check_backoff(o.row_retry, "row_retry");
    check_backoff(o.transport_retry, "transport_retry");
    require(failpoints_enabled || !o.failpoint,
            "failpoint is set, but failpoints are compiled out (define LETTERBOX_FAILPOINTS, "
            "which linking letterbox::testing does)");
}

} // namespace letterbox::detail
