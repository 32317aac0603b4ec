// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <exception>
#include <system_error>

namespace letterbox {

/// What a retry policy decided after a failed attempt.
struct retry_decision {
    enum class action {
        retry_now,       ///< run the handler again in-process
        redeliver_later, ///< hand the message back to the broker to retry after `delay`
        give_up          ///< stop retrying: dead-letter it with its reason
    };
    action what = action::give_up;
    std::chrono::milliseconds delay{0};

    friend bool operator==(const retry_decision&, const retry_decision&) = default;
};

/// What a retry policy knows about a failed attempt.
struct attempt_failure {
    /// 1 for the first attempt.
    std::uint32_t attempt = 1;
    /// The failure as an error code, when the handler returned one.
    std::error_code error{};
    /// The failure as an exception, when the handler threw.
    std::exception_ptr exception{};
};

/// A retry policy: a value that decides, and never runs anything (MassTransit's split between
/// `IRetryPolicy` and the filter that applies it).
///
/// Requirements, for `p` of type `const P&` and `f` of type `const attempt_failure&`:
/// 1. `p.decide(f)` returns a `retry_decision`.
///
/// Semantics: deterministic for a given policy value and failure (jitter comes from a seed
/// held in the policy); a permanent failure gives `give_up` without retrying.
///
/// Does not require: state changes on `decide` (it is `const`), or any particular schedule.
template <class P>
concept retry_policy = std::copy_constructible<P> &&
    requires(const P& p, const attempt_failure& f) {
    { p.decide(f) } -> std::same_as<retry_decision>;
};

} // namespace letterbox
