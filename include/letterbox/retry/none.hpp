// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/retry/classifier.hpp>
#include <letterbox/retry/detail/decide.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>

namespace letterbox::retry {

/// The retry policy that never retries: one attempt, then give up.
///
/// `decide` gives `retry_decision::permanent_failure()` when the classifier says the failure
/// is permanent, and `retry_decision::exhausted()` otherwise, so the dead-letter reason still
/// tells a poison message from a transient failure. `max_attempts()` is 1 and `horizon()` is
/// zero.
///
/// Example:
///
///     retry::none policy;                    // the handler runs once
///     auto strict = retry::none{}.with_classifier(
///         retry::classifier{}.permanent<std::invalid_argument>());
class none {
public:
    none() = default;

    /// Replaces the classifier (by default `classifier{}`, the built-in rules only).
    none& with_classifier(classifier c) & {
        classifier_ = std::move(c);
        return *this;
    }
    [[nodiscard]] none with_classifier(classifier c) && {
        classifier_ = std::move(c);
        return std::move(*this);
    }

    /// Give up: permanently if the classifier says so, otherwise because the one attempt ran
    /// out.
    retry_decision decide(const attempt_failure& f) const {
        return detail::decide(classifier_, max_attempts(), f, delay_of);
    }

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

    const classifier& get_classifier() const noexcept { return classifier_; }

private:
    static std::chrono::milliseconds delay_of(std::uint32_t, std::string_view) noexcept {
        return std::chrono::milliseconds{0};
    }

    classifier classifier_;
};

} // namespace letterbox::retry
