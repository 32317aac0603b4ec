// SPDX-License-Identifier: BSL-1.0
//
// The Friday night of the incident, as data: who enrolls, and what goes wrong for which
// enrollment. Both runs (naive and letterbox) replay exactly the same night. Enrollments are
// numbered 1..N in arrival order; the load generator sends them one after the other, so the
// service's database gives enrollment n the id n.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace demo {

struct fault_plan {
    /// How many students enroll, and how far apart their requests start.
    std::size_t enrollments = 200;
    int interval_ms = 4;
    /// The cluster failover: the broker is unreachable from the arrival of enrollment
    /// `outage_first` until the answer to `outage_last`.
    std::size_t outage_first = 0;
    std::size_t outage_last = 0;
    /// The enrollment service's process dies right after committing these (an autoscaler's
    /// SIGKILL, an OOM kill, a deploy): the publish that was to follow never happens.
    std::set<std::size_t> crashes{};
    /// The broker stores these events, but the confirm is lost on the way back (the connection
    /// dropped): a publisher that tries again sends a second copy.
    std::set<std::size_t> lost_confirms{};
    /// A canary of the next release confirms this enrollment and writes its event with the
    /// price field renamed (`amount_cents` instead of `price_cents`): invoicing cannot read it.
    std::size_t poison = 0;
    /// The e-mail provider answers 503 to the first `email_failures` attempts for these.
    std::set<std::size_t> email_hiccups{};
    unsigned email_failures = 3;

    bool in_outage(std::size_t n) const { return n >= outage_first && n <= outage_last; }
    std::size_t outage_length() const { return outage_last - outage_first + 1; }
};

/// The plan for `seed`: where the outage falls and which enrollments crash, lose their confirm,
/// are poison or meet the e-mail hiccups, all disjoint, so that the expected counts are the same
/// for every seed (only the positions move).
inline fault_plan make_plan(std::uint64_t seed, std::size_t enrollments = 200) {
    fault_plan p;
    p.enrollments = std::max<std::size_t>(enrollments, 100);
    std::mt19937_64 rng(seed);
    auto pick = [&](std::size_t lo, std::size_t hi) {
        return lo + static_cast<std::size_t>(rng() % (hi - lo + 1));
    };
    const std::size_t n = p.enrollments;
    const std::size_t outage = n / 5; // 40 of 200
    p.outage_first = pick(n / 5, n / 2);
    p.outage_last = p.outage_first + outage - 1;
    std::set<std::size_t> taken;
    // 18 faults among the 60+ enrollments outside the outage: a free one turns up quickly.
    auto fresh = [&] {
        for (int tries = 0; tries < 100'000; ++tries) {
            const std::size_t k = pick(2, n - 1);
            if (!p.in_outage(k) && taken.insert(k).second)
                return k;
        }
        throw std::logic_error("make_plan: no free enrollment left for a fault");
    };
    for (int i = 0; i < 3; ++i)
        p.crashes.insert(fresh());
    for (int i = 0; i < 4; ++i)
        p.lost_confirms.insert(fresh());
    p.poison = fresh();
    for (int i = 0; i < 10; ++i)
        p.email_hiccups.insert(fresh());
    return p;
}

/// Enrollment n's request body.
inline std::string enrollment_request(std::size_t n) {
    static const char* const courses[] = {"cpp-101", "distributed-systems", "sql-basics",
                                          "rust-201"};
    static const int prices[] = {4990, 12900, 3990, 8990};
    char student[32];
    std::snprintf(student, sizeof student, "student-%03zu", n);
    return std::string("{\"student\":\"") + student + "\",\"course\":\"" + courses[n % 4] +
           "\",\"price_cents\":" + std::to_string(prices[n % 4]) + "}";
}

} // namespace demo
