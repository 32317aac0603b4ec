// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A snapshot of an `outbox_relay`'s counters, as returned by `outbox_relay::counters()`.
///
/// Totals count since the relay was constructed; `in_flight` and `lag` are gauges. Every row
/// the relay publishes successfully is counted once in `published`; a row that failed is counted
/// in `failed` each time its failure was recorded, and also in `parked` when that failure parked
/// it. Transport failures are never charged to a row: they appear in `transport_failures` and
/// `backoffs` only.
struct relay_counters {
    /// Calls to the store's `claim`, and the rows they returned.
    std::uint64_t claims = 0;
    std::uint64_t claimed = 0;
    /// Publishes started (first attempts and republishes after a transport failure).
    std::uint64_t publish_attempts = 0;
    /// Rows marked published: confirmed and routed, and accepted by `mark_published`.
    std::uint64_t published = 0;
    /// Publishes that came back unroutable (`errc::no_route`).
    std::uint64_t returned = 0;
    /// Publishes the broker refused (`errc::publish_nacked`).
    std::uint64_t nacked = 0;
    /// Row failures recorded in the store (returns, nacks and other per-message refusals).
    std::uint64_t failed = 0;
    /// Of `failed`, the failures that parked their row (it reached `max_attempts`).
    std::uint64_t parked = 0;
    /// Publishes that failed because the transport was unavailable (connection closed, outcome
    /// unknown, ...), and the global back-offs they caused.
    std::uint64_t transport_failures = 0;
    std::uint64_t backoffs = 0;
    /// Store calls that failed with a store error (retried after a back-off).
    std::uint64_t store_errors = 0;
    /// Settlements refused with `errc::lease_lost` (or `record_not_found`): another relay owns
    /// the row now, or an operator settled it.
    std::uint64_t lease_lost = 0;
    /// Held rows dropped from memory unpublished because their lease ran out (they are claimed
    /// again, by this relay or another one).
    std::uint64_t leases_expired = 0;
    /// Rows left unsettled by a graceful stop: they stay pending and leased until the lease
    /// expires, then any relay claims them.
    std::uint64_t abandoned = 0;
    /// Published rows deleted by the retention purge.
    std::uint64_t purged = 0;
    /// Publishes started and not completed yet, and the most there ever were at once.
    std::size_t in_flight = 0;
    std::size_t max_in_flight = 0;
    /// The age of the store's oldest pending row (`outbox_stats::oldest_pending_age`) at the
    /// last refresh (each poll and each claim); zero when nothing is pending.
    store_time::duration lag{};

    friend bool operator==(const relay_counters&, const relay_counters&) = default;
};

} // namespace letterbox
