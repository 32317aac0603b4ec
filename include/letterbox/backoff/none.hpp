// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/classifier.hpp>
#include <letterbox/backoff/detail/classified.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff {

/// The retry policy that never retries: one attempt, then give up.
///
/// `decide` gives `retry_decision::permanent_failure()` when the classifier says the failure
/// is permanent, and `retry_decision::exhausted()` otherwise, so the dead-letter reason still
/// tells a poison message from a transient failure. `max_attempts()` is 1 and `horizon()` is
/// zero.
///
/// Builder (from `detail::classified`): `with_classifier(c)` replaces the classifier, returning
/// the policy itself on an lvalue and a new `none` on an rvalue; `get_classifier()` reads it.
///
/// Example:
///
///     backoff::none policy;                    // the handler runs once
///     auto strict = backoff::none{}.with_classifier(
///         backoff::classifier{}.permanent<std::invalid_argument>());
class none : public detail::classified<none> {
public:
    none() = default;

    /// Give up: permanently if the classifier says so, otherwise because the one attempt ran
    /// out.
    retry_decision decide(const attempt_failure& f) const { return decision(f); }

    /// 1: the first attempt is the only one.
    std::uint32_t max_attempts() const noexcept { return 1; }
    /// Zero: nothing is ever scheduled.
    std::chrono::milliseconds horizon() const noexcept { return std::chrono::milliseconds{0}; }
    /// Zero, for any attempt (for symmetry with the other policies).
    std::chrono::milliseconds base_delay(std::uint32_t) const noexcept {
        return std::chrono::milliseconds{0};
    }
    /// Zero, for any attempt and message.
    std::chrono::milliseconds delay(std::uint32_t, std::string_view) const noexcept {
        return std::chrono::milliseconds{0};
    }
};

} // namespace letterbox::backoff
