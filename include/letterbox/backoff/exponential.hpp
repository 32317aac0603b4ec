// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/classifier.hpp>
#include <letterbox/backoff/detail/check_argument.hpp>
#include <letterbox/backoff/detail/jittered.hpp>
#include <letterbox/backoff/jitter.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/saturating.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff {

/// The retry policy whose delay grows geometrically up to a cap: after attempt `k` fails it
/// waits `min(cap, initial * multiplier^(k - 1))`, with jitter applied, up to a number of
/// attempts.
///
/// **`max_attempts` counts every attempt, the first included**: `exponential(100ms, 2.0, 10s,
/// 5)` runs the handler at most 5 times and waits 100, 200, 400 and 800 ms between them.
/// (MassTransit's `Exponential(5, ...)` means 5 *retries*, 6 runs.)
///
/// `decide(f)`: `permanent_failure()` if the classifier says the failure is permanent;
/// otherwise `exhausted()` once `f.attempt >= max_attempts`; otherwise
/// `retry_after(delay(f.attempt, f.message_id))`.
///
/// The base schedule (`base_delay`) is non-decreasing and never above `cap`. It is computed
/// without overflow: the delay is multiplied step by step in `double` and stops at `cap`, then
/// truncated to whole milliseconds. IEEE-754 multiplication is correctly rounded, so the
/// schedule is the same on every platform whose `double` is binary64 (`std::pow` is not
/// required to be). Jitter only lowers a delay, so every delay is at most
/// `cap` too. `horizon()` is the sum of the base delays of attempts `1 .. max_attempts - 1`,
/// saturating at `milliseconds::max()`.
///
/// Cost: `base_delay(k)` and `decide` take `min(k, s)` multiplications, where `s` is the number
/// of steps the schedule takes to reach `cap` (`log(cap / initial) / log(multiplier)`); the
/// constructor computes `horizon()` once in `min(max_attempts, s)` steps.
///
/// Builders, which return the policy itself on an lvalue and a new `exponential` on an
/// rvalue: `with_jitter(j)` replaces the jitter (by default none; from `detail::jittered`, with
/// `get_jitter()` and `delay(attempt, message_id)`, which is
/// `apply(get_jitter(), base_delay(attempt), message_id, attempt)`); `with_classifier(c)`
/// replaces the classifier (by default `classifier{}`; from `detail::classified`, the base of
/// `detail::jittered`, with `get_classifier()`).
///
/// Example:
///
///     auto policy = backoff::exponential(200ms, 2.0, 30s,
///     8).with_jitter(backoff::jitter::full(1));
///     // up to 7 retries, after at most 200 ms, 400 ms, ..., 12.8 s
class exponential : public detail::jittered<exponential> {
public:
    /// Waits `initial` after the first attempt, `multiplier` times longer after each further
    /// one, never more than `cap`; allows `max_attempts` attempts in all, the first included.
    ///
    /// Throws `letterbox::error` with `errc::invalid_argument` if `initial` is negative,
    /// `multiplier` is not a finite number of at least 1, `cap` is less than `initial`, or
    /// `max_attempts` is 0.
    exponential(std::chrono::milliseconds initial, double multiplier, std::chrono::milliseconds cap,
                std::uint32_t max_attempts)
        : initial_(initial)
        , multiplier_(multiplier)
        , cap_(cap)
        , max_attempts_(max_attempts) {
        detail::check_argument(initial.count() >= 0,
                               "backoff::exponential: the initial delay must not be negative");
        detail::check_argument(std::isfinite(multiplier) && multiplier >= 1.0,
                               "backoff::exponential: the multiplier must be a finite number of "
                               "at least 1");
        detail::check_argument(cap >= initial,
                               "backoff::exponential: the cap must not be less than the initial "
                               "delay");
        detail::check_argument(max_attempts >= 1,
                               "backoff::exponential: max_attempts must be at least 1 (it counts "
                               "every attempt, the first included)");
        horizon_ = sum_of_base_delays();
    }

    /// Give up if the failure is permanent or the attempts ran out; otherwise retry after the
    /// (jittered) delay for `f.attempt`.
    retry_decision decide(const attempt_failure& f) const { return decision(f); }

    /// The total number of attempts allowed, the first included.
    std::uint32_t max_attempts() const noexcept { return max_attempts_; }
    /// The sum of `base_delay(k)` for `k` in `1 .. max_attempts - 1`, or `milliseconds::max()`
    /// if that overflows: an upper bound of all the delays of one message, jitter or not.
    std::chrono::milliseconds horizon() const noexcept { return horizon_; }

    /// The delay before the retry that follows attempt `attempt`, without jitter:
    /// `min(cap, initial * multiplier^(attempt - 1))`, truncated to whole milliseconds.
    /// Defined for every attempt (`decide` uses it below `max_attempts` only); attempt 0 is
    /// taken as 1.
    std::chrono::milliseconds base_delay(std::uint32_t attempt) const noexcept {
        if (attempt <= 1 || is_constant()) {
            return initial_;
        }
        double d = static_cast<double>(initial_.count());
        for (std::uint32_t k = 1; k < attempt; ++k) {
            d *= multiplier_;
            if (reaches_cap(d)) {
                return cap_;
            }
        }
        return to_delay(d);
    }

    std::chrono::milliseconds initial() const noexcept { return initial_; }
    double multiplier() const noexcept { return multiplier_; }
    std::chrono::milliseconds cap() const noexcept { return cap_; }

private:
    // A multiplier of 1, or an initial delay of 0, never grows: every base delay is `initial`.
    bool is_constant() const noexcept { return multiplier_ == 1.0 || initial_.count() == 0; }

    // `d` is at or above the cap. Comparing in double keeps a huge `d` from being converted to
    // an integer (undefined behaviour when out of range).
    bool reaches_cap(double d) const noexcept { return d >= static_cast<double>(cap_.count()); }

    // The base delay of an attempt after the first, from the running product `d` (below the
    // cap as a double, hence below 2^63: the conversion is defined). Clamped to
    // [initial, cap]: `double` may round `initial` or `cap` by up to half a unit in the last
    // place, and the schedule must still start at `initial` and never pass `cap`. Clamping a
    // non-decreasing sequence keeps it non-decreasing.
    std::chrono::milliseconds to_delay(double d) const noexcept {
        return std::clamp(std::chrono::milliseconds{static_cast<std::chrono::milliseconds::rep>(d)},
                          initial_, cap_);
    }

    // The same steps as base_delay, walked once for attempts 1 .. max_attempts - 1.
    std::chrono::milliseconds sum_of_base_delays() const noexcept {
        const std::uint32_t retries = max_attempts_ - 1;
        if (retries == 0 || is_constant()) {
            return letterbox::detail::saturating_mul(initial_, retries);
        }
        std::chrono::milliseconds sum = initial_; // attempt 1
        double d = static_cast<double>(initial_.count());
        for (std::uint32_t k = 2; k <= retries; ++k) {
            d *= multiplier_;
            if (reaches_cap(d)) {
                // Attempts k .. retries all wait the cap.
                return letterbox::detail::saturating_add(
                    sum, letterbox::detail::saturating_mul(cap_, retries - k + 1));
            }
            sum = letterbox::detail::saturating_add(sum, to_delay(d));
            if (sum == std::chrono::milliseconds::max()) {
                return sum;
            }
        }
        return sum;
    }

    std::chrono::milliseconds initial_;
    double multiplier_;
    std::chrono::milliseconds cap_;
    std::uint32_t max_attempts_;
    std::chrono::milliseconds horizon_{0};
};

} // namespace letterbox::backoff
