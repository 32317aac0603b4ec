// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/classifier.hpp>
#include <letterbox/backoff/detail/check_argument.hpp>
#include <letterbox/backoff/detail/classified.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff {

/// The retry policy that retries at once, without waiting, up to a number of attempts.
///
/// **`max_attempts` counts every attempt, the first included**: `immediate(5)` runs the
/// handler at most 5 times, that is 1 attempt and 4 retries. (MassTransit's `Immediate(5)`
/// means 5 *retries*, 6 runs; letterbox counts attempts because the attempt count is what the
/// message carries in its headers.)
///
/// `decide(f)`: `permanent_failure()` if the classifier says the failure is permanent;
/// otherwise `exhausted()` once `f.attempt >= max_attempts`; otherwise `retry_after(0ms)`.
/// `horizon()` is zero. Meant for short transient faults (a lock timeout, a dropped
/// connection) retried in-process.
///
/// Builder (from `detail::classified`): `with_classifier(c)` replaces the classifier, returning
/// the policy itself on an lvalue and a new `immediate` on an rvalue; `get_classifier()` reads
/// it.
///
/// Example:
///
///     auto policy = backoff::immediate(3); // 3 runs at most: the first and 2 retries
class immediate : public detail::classified<immediate> {
public:
    /// Allows `max_attempts` attempts in all, the first included.
    ///
    /// Throws `letterbox::error` with `errc::invalid_argument` if `max_attempts` is 0.
    explicit immediate(std::uint32_t max_attempts)
        : max_attempts_(max_attempts) {
        detail::check_argument(max_attempts >= 1,
                               "backoff::immediate: max_attempts must be at least 1 (it counts "
                               "every attempt, the first included)");
    }

    /// Give up if the failure is permanent or the attempts ran out; otherwise retry now.
    retry_decision decide(const attempt_failure& f) const { return decision(f); }

    /// The total number of attempts allowed, the first included.
    std::uint32_t max_attempts() const noexcept { return max_attempts_; }
    /// Zero: every retry is immediate.
    std::chrono::milliseconds horizon() const noexcept { return std::chrono::milliseconds{0}; }
    /// Zero, for any attempt.
    std::chrono::milliseconds base_delay(std::uint32_t) const noexcept {
        return std::chrono::milliseconds{0};
    }
    /// Zero, for any attempt and message.
    std::chrono::milliseconds delay(std::uint32_t, std::string_view) const noexcept {
        return std::chrono::milliseconds{0};
    }

private:
    std::uint32_t max_attempts_;
};

} // namespace letterbox::backoff
