// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/classifier.hpp>
#include <letterbox/backoff/detail/check_argument.hpp>
#include <letterbox/backoff/detail/jittered.hpp>
#include <letterbox/backoff/jitter.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/saturating.hpp>

#include <chrono>
#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff {

/// The retry policy that waits the same delay before every retry, up to a number of attempts.
///
/// **`max_attempts` counts every attempt, the first included**: `fixed(1s, 5)` runs the
/// handler at most 5 times, that is 1 attempt and 4 retries, each after 1 s. (MassTransit's
/// `Interval(5, ...)` means 5 *retries*, 6 runs.)
///
/// `decide(f)`: `permanent_failure()` if the classifier says the failure is permanent;
/// otherwise `exhausted()` once `f.attempt >= max_attempts`; otherwise
/// `retry_after(delay(f.attempt, f.message_id))`, the fixed delay with the jitter applied
/// (jitter only lowers it). `horizon()` is `delay * (max_attempts - 1)`, saturating.
///
/// Builders, which return the policy itself on an lvalue and a new `fixed` on an rvalue:
/// `with_jitter(j)` replaces the jitter (by default none; from `detail::jittered`, with
/// `get_jitter()` and `delay(attempt, message_id)`, which is
/// `apply(get_jitter(), base_delay(attempt), message_id, attempt)`); `with_classifier(c)`
/// replaces the classifier (by default `classifier{}`; from `detail::classified`, the base of
/// `detail::jittered`, with `get_classifier()`).
///
/// Example:
///
///     auto policy = backoff::fixed(500ms, 4).with_jitter(backoff::jitter::equal(7));
///     // up to 3 retries, each after 250 to 500 ms, the same for a given message id
class fixed : public detail::jittered<fixed> {
public:
    /// Waits `delay` before each retry; allows `max_attempts` attempts in all, the first
    /// included.
    ///
    /// Throws `letterbox::error` with `errc::invalid_argument` if `delay` is negative or
    /// `max_attempts` is 0.
    fixed(std::chrono::milliseconds delay, std::uint32_t max_attempts)
        : delay_(delay)
        , max_attempts_(max_attempts) {
        detail::check_argument(delay.count() >= 0,
                               "backoff::fixed: the delay must not be negative");
        detail::check_argument(max_attempts >= 1,
                               "backoff::fixed: max_attempts must be at least 1 (it counts every "
                               "attempt, the first included)");
    }

    /// Give up if the failure is permanent or the attempts ran out; otherwise retry after the
    /// (jittered) delay.
    retry_decision decide(const attempt_failure& f) const { return decision(f); }

    /// The total number of attempts allowed, the first included.
    std::uint32_t max_attempts() const noexcept { return max_attempts_; }
    /// `delay * (max_attempts - 1)`, or `milliseconds::max()` if that overflows.
    std::chrono::milliseconds horizon() const noexcept {
        return letterbox::detail::saturating_mul(delay_, max_attempts_ - 1);
    }
    /// The delay before the retry that follows attempt `attempt`, without jitter: the fixed
    /// delay, for any attempt.
    std::chrono::milliseconds base_delay(std::uint32_t) const noexcept { return delay_; }

private:
    std::chrono::milliseconds delay_;
    std::uint32_t max_attempts_;
};

} // namespace letterbox::backoff
