// SPDX-License-Identifier: BSL-1.0
//
// Property (STYLE 2.7): the retry schedule is monotone and bounded by the policy. For random
// exponential and fixed policies (initial delay, multiplier, cap, max_attempts, jitter kind,
// seed) and random message ids:
// - the base schedule is non-decreasing, starts at the initial delay and never exceeds the cap;
// - every jittered delay is at most its base delay (at least half of it under equal jitter,
//   and equal to it without jitter, so that schedule is monotone too);
// - decide retries exactly below max_attempts, with `delay(attempt, id)`, and gives up from
//   there; a permanent failure gives up at once;
// - the same policy, a copy or a policy rebuilt from the same arguments, gives the same
//   sequence for the same message id (replay);
// - horizon() is the saturating sum of the base delays, so it bounds the actual delays.
//
// Randomness comes only from RapidCheck, seeded with LETTERBOX_SEED by the shared test main.
// Replay: LETTERBOX_SEED=<n> ./letterbox_property_tests "[retry]", or the
// RC_PARAMS="reproduce=..." line RapidCheck prints. RC_PARAMS max_success overrides the
// default of 2,000 policies per property.

#include <letterbox/backoff/exponential.hpp>

#include <letterbox/backoff/fixed.hpp>
#include <letterbox/backoff/jitter.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/error.hpp>
#include <letterbox/testing/seed.hpp>

#include "support/check_property.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace property_retry_schedule {

namespace {

namespace backoff = letterbox::backoff;
using letterbox::attempt_failure;
using letterbox::retry_decision;
using std::chrono::milliseconds;

constexpr int kMaxSuccess = 2000;
constexpr std::uint32_t kMaxAttempts = 60; // each property walks every attempt

// ---- generated inputs ---------------------------------------------------------------------

struct exponential_args {
    std::int64_t initial_ms;
    double multiplier;
    std::int64_t cap_ms;
    std::uint32_t max_attempts;
    backoff::jitter_kind kind;
    std::uint64_t seed;
};

std::ostream& operator<<(std::ostream& os, const exponential_args& a) {
    return os << "exponential(" << a.initial_ms << "ms, " << a.multiplier << ", " << a.cap_ms
              << "ms, " << a.max_attempts << ") jitter " << static_cast<int>(a.kind) << " seed "
              << a.seed;
}

backoff::exponential make(const exponential_args& a) {
    return backoff::exponential(milliseconds{a.initial_ms}, a.multiplier, milliseconds{a.cap_ms},
                                a.max_attempts)
        .with_jitter(backoff::jitter{a.kind, a.seed});
}

rc::Gen<backoff::jitter_kind> jitter_kinds() {
    return rc::gen::element(backoff::jitter_kind::none, backoff::jitter_kind::full,
                            backoff::jitter_kind::equal);
}

// Delays from 0 to ~11 days, with the edges (0, 1 ms) and huge values that make sums and
// products overflow.
rc::Gen<std::int64_t> delays_ms() {
    constexpr auto top = std::numeric_limits<std::int64_t>::max();
    return rc::gen::weightedOneOf<std::int64_t>({
        {4, rc::gen::inRange<std::int64_t>(0, 2'000)},
        {3, rc::gen::inRange<std::int64_t>(0, 1'000'000'000)},
        {1, rc::gen::element(std::int64_t{0}, std::int64_t{1}, top / 4, top / 2, top - 1, top)},
    });
}

// Multipliers from 1 to 10 in steps of 1/1000, plus the edges: exactly 1, barely above 1, and
// large enough to overflow in a few steps.
rc::Gen<double> multipliers() {
    return rc::gen::weightedOneOf<double>({
        {6, rc::gen::map(rc::gen::inRange(1000, 10'001), [](int m) { return m / 1000.0; })},
        {1, rc::gen::element(1.0, 1.0000001, 1.5, 2.0, 1e6, 1e300)},
    });
}

rc::Gen<exponential_args> exponential_policies() {
    return rc::gen::exec([] {
        exponential_args a{};
        a.initial_ms = *delays_ms();
        a.multiplier = *multipliers();
        // The cap is at least the initial delay: sometimes equal, sometimes far above.
        const auto headroom = std::numeric_limits<std::int64_t>::max() - a.initial_ms;
        const auto extra = *delays_ms();
        a.cap_ms = a.initial_ms + (extra > headroom ? headroom : extra);
        a.max_attempts = *rc::gen::inRange<std::uint32_t>(1, kMaxAttempts + 1);
        a.kind = *jitter_kinds();
        a.seed = *rc::gen::arbitrary<std::uint64_t>();
        return a;
    });
}

// ---- helpers --------------------------------------------------------------------------------

milliseconds saturating_sum(milliseconds a, milliseconds b) {
    return a > milliseconds::max() - b ? milliseconds::max() : a + b;
}

attempt_failure transient_failure(std::uint32_t attempt, std::string_view id) {
    attempt_failure f;
    f.attempt = attempt;
    f.error = letterbox::errc::timed_out;
    f.message_id = id;
    return f;
}

/// The decisions `p` makes for attempts 1 .. max_attempts of one message that always fails
/// transiently.
template <class Policy>
std::vector<retry_decision> decisions(const Policy& p, std::string_view id) {
    std::vector<retry_decision> out;
    for (std::uint32_t a = 1; a <= p.max_attempts(); ++a) {
        out.push_back(p.decide(transient_failure(a, id)));
    }
    return out;
}

/// Checks every invariant of the header comment for policy `p` and message `id`.
template <class Policy>
void check_schedule(const Policy& p, backoff::jitter_kind kind, milliseconds initial,
                    milliseconds cap, std::string_view id) {
    RC_ASSERT(p.max_attempts() >= 1U);
    milliseconds previous_base{0};
    milliseconds previous_actual{0};
    milliseconds base_sum{0};
    milliseconds actual_sum{0};
    for (std::uint32_t a = 1; a < p.max_attempts(); ++a) {
        const auto base = p.base_delay(a);
        const auto actual = p.delay(a, id);
        RC_LOG() << "attempt " << a << ": base " << base.count() << " ms, actual " << actual.count()
                 << " ms\n";
        if (a == 1) {
            RC_ASSERT(base == initial);
        }
        RC_ASSERT(base >= previous_base); // monotone base schedule
        RC_ASSERT(base <= cap);
        RC_ASSERT(actual.count() >= 0);
        RC_ASSERT(actual <= base); // jitter only lowers
        switch (kind) {
        case backoff::jitter_kind::none:
            RC_ASSERT(actual == base);
            RC_ASSERT(actual >= previous_actual); // monotone actual schedule
            break;
        case backoff::jitter_kind::equal:
            RC_ASSERT(actual >= base - base / 2); // at least half, rounded up
            break;
        case backoff::jitter_kind::full:
            break;
        }
        const auto d = p.decide(transient_failure(a, id));
        RC_ASSERT(d == retry_decision::retry_after(actual));
        previous_base = base;
        previous_actual = actual;
        base_sum = saturating_sum(base_sum, base);
        actual_sum = saturating_sum(actual_sum, actual);
    }
    RC_ASSERT(p.decide(transient_failure(p.max_attempts(), id)) == retry_decision::exhausted());
    RC_ASSERT(p.horizon() == base_sum);
    RC_ASSERT(p.horizon() >= actual_sum);
    // Beyond max_attempts the base schedule stays monotone and capped.
    RC_ASSERT(p.base_delay(p.max_attempts()) >= previous_base);
    RC_ASSERT(p.base_delay(p.max_attempts()) <= cap);
}

/// test_support::check_property with this file's number of cases.
template <class Testable>
void check_property(const char* id, Testable&& testable) {
    test_support::check_property(id, kMaxSuccess, std::forward<Testable>(testable));
}

} // namespace

TEST_CASE("an exponential schedule is monotone, capped, replayable and within its horizon",
          "[property][retry]") {
    // What the generated policies reached, so that the property cannot pass vacuously.
    struct {
        int grew = 0;      // a later base delay above the initial one, below the cap
        int capped = 0;    // the cap reached above the initial delay
        int saturated = 0; // horizon() saturated at milliseconds::max()
        int jittered = 0;  // jitter lowered a delay
    } seen;
    check_property("retry_schedule/exponential", [&seen] {
        const auto args = *exponential_policies();
        const auto id = *rc::gen::arbitrary<std::string>();
        RC_LOG() << args << ", message id '" << id << "'\n";
        const auto p = make(args);
        check_schedule(p, args.kind, milliseconds{args.initial_ms}, milliseconds{args.cap_ms}, id);
        // Replay: a copy and a policy rebuilt from the same arguments decide the same.
        const auto expected = decisions(p, id);
        const auto copy = p;
        RC_ASSERT(decisions(copy, id) == expected);
        RC_ASSERT(decisions(make(args), id) == expected);

        const auto last = p.base_delay(p.max_attempts());
        seen.grew += last > p.initial() && last < p.cap() ? 1 : 0;
        seen.capped += last == p.cap() && p.cap() > p.initial() ? 1 : 0;
        seen.saturated += p.horizon() == milliseconds::max() ? 1 : 0;
        seen.jittered += p.max_attempts() > 1 && p.delay(1, id) < p.base_delay(1) ? 1 : 0;
    });
    INFO("grew " << seen.grew << ", capped " << seen.capped << ", saturated " << seen.saturated
                 << ", jittered " << seen.jittered);
    CHECK(seen.grew > 0);
    CHECK(seen.capped > 0);
    CHECK(seen.saturated > 0);
    CHECK(seen.jittered > 0);
}

TEST_CASE("a fixed schedule is constant, replayable and within its horizon", "[property][retry]") {
    check_property("retry_schedule/fixed", [] {
        const auto delay = milliseconds{*delays_ms()};
        const auto max_attempts = *rc::gen::inRange<std::uint32_t>(1, kMaxAttempts + 1);
        const auto j = backoff::jitter{*jitter_kinds(), *rc::gen::arbitrary<std::uint64_t>()};
        const auto id = *rc::gen::arbitrary<std::string>();
        const auto p = backoff::fixed(delay, max_attempts).with_jitter(j);
        check_schedule(p, j.kind, delay, delay, id);
        RC_ASSERT(decisions(backoff::fixed(delay, max_attempts).with_jitter(j), id) ==
                  decisions(p, id));
    });
}

TEST_CASE("a permanent failure gives up at once, at any attempt", "[property][retry]") {
    check_property("retry_schedule/permanent", [] {
        const auto args = *exponential_policies();
        const auto p = make(args);
        attempt_failure f;
        f.attempt = *rc::gen::inRange<std::uint32_t>(1, kMaxAttempts + 10);
        f.error = *rc::gen::element(letterbox::errc::payload_malformed,
                                    letterbox::errc::payload_type_mismatch,
                                    letterbox::errc::payload_unencodable);
        RC_ASSERT(p.decide(f) == retry_decision::permanent_failure());
        // And a store error is retried like any transient failure.
        f.error = letterbox::errc::store_busy;
        RC_ASSERT(p.decide(f).permanent == false);
        RC_ASSERT((p.decide(f).what == retry_decision::action::retry) ==
                  (f.attempt < p.max_attempts()));
    });
}

TEST_CASE("different message ids under full jitter do not retry in lockstep", "[property][retry]") {
    check_property("retry_schedule/spread", [] {
        const auto seed = *rc::gen::arbitrary<std::uint64_t>();
        const auto base = milliseconds{*rc::gen::inRange<std::int64_t>(10'000, 1'000'000)};
        const auto attempt = *rc::gen::inRange<std::uint32_t>(1, 100);
        // 64 distinct message ids: with at least 10,001 values to choose from, all 64 delays
        // being equal has a probability below 10^-250.
        std::vector<milliseconds> delays;
        for (int i = 0; i < 64; ++i) {
            delays.push_back(backoff::apply(backoff::jitter::full(seed), base,
                                            "m-" + std::to_string(i), attempt));
        }
        bool all_equal = true;
        for (const auto& d : delays) {
            all_equal = all_equal && d == delays.front();
        }
        RC_ASSERT(!all_equal);
    });
}

} // namespace property_retry_schedule
