// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/classifier.hpp>
#include <letterbox/backoff/detail/decide.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>

#include <cstdint>
#include <string_view>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff::detail {

/// The failure classifier a retry policy holds, with its builder and accessor: a public base of
/// every shipped policy (directly of `none` and `immediate`, through `jittered` of `fixed` and
/// `exponential`), which passes itself as `Derived` so the builder returns the policy, not this
/// base.
///
/// `Derived` must have `max_attempts()` and `delay(attempt, message_id)` (both `const`), which
/// `decision` reads.
template <class Derived>
class classified {
public:
    /// Replaces the classifier (by default `classifier{}`, the built-in rules only), which
    /// `decide` consults first: a failure it calls permanent gives up at once.
    ///
    /// On an lvalue, changes the policy and returns it (`Derived&`); on an rvalue, returns the
    /// changed policy by value, so `backoff::fixed(1s, 3).with_classifier(c)` is a
    /// `backoff::fixed`.
    Derived& with_classifier(classifier c) & {
        classifier_ = std::move(c);
        return static_cast<Derived&>(*this);
    }
    /// As above, for a temporary policy: returns the changed policy by value.
    [[nodiscard]] Derived with_classifier(classifier c) && {
        return std::move(with_classifier(std::move(c)));
    }

    /// The classifier `decide` consults (the last one `with_classifier` set).
    const classifier& get_classifier() const noexcept { return classifier_; }

protected:
    classified() = default;

    /// The decision of `detail::decide` for `f`, with this classifier, the policy's
    /// `max_attempts()` and its `delay(attempt, message_id)`: what every shipped policy's
    /// `decide` returns.
    retry_decision decision(const attempt_failure& f) const {
        const auto& policy = static_cast<const Derived&>(*this);
        return detail::decide(classifier_, policy.max_attempts(), f,
                              [&policy](std::uint32_t attempt, std::string_view message_id) {
                                  return policy.delay(attempt, message_id);
                              });
    }

private:
    classifier classifier_;
};

} // namespace letterbox::backoff::detail
