// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <exception>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// What a retry policy decided after a failed attempt: retry after `delay`, or give up.
///
/// Where the retry happens (in-process, or through the broker's delayed redelivery) is the
/// middleware's business, not the policy's. `permanent` tells the two reasons for giving up
/// apart: the failure was classified permanent (a payload that cannot be decoded), or the
/// attempts ran out.
struct retry_decision {
    enum class action {
        retry,  ///< run the handler again after `delay`
        give_up ///< stop retrying: dead-letter the message with its reason
    };
    action what = action::give_up;
    /// How long to wait before the next attempt (`retry` only; zero for `give_up`).
    std::chrono::milliseconds delay{0};
    /// `give_up` because the failure was classified permanent, not because the attempts ran out.
    bool permanent = false;

    /// Retry after `d`.
    static constexpr retry_decision retry_after(std::chrono::milliseconds d) noexcept {
        return {action::retry, d, false};
    }
    /// Give up: the attempts ran out (the failure itself was transient).
    static constexpr retry_decision exhausted() noexcept {
        return {action::give_up, std::chrono::milliseconds{0}, false};
    }
    /// Give up at once: the failure is permanent, so retrying cannot help.
    static constexpr retry_decision permanent_failure() noexcept {
        return {action::give_up, std::chrono::milliseconds{0}, true};
    }

    friend bool operator==(const retry_decision&, const retry_decision&) = default;
};

/// What a retry policy knows about a failed attempt.
///
/// The referenced data (`message_id`) belongs to the caller and must outlive the `decide` call.
struct attempt_failure {
    /// Attempts made so far, including the one that just failed: 1 after the first attempt.
    std::uint32_t attempt = 1;
    /// The failure as an error code, when the handler returned one (or threw one).
    std::error_code error{};
    /// The failure as an exception, when the handler threw.
    std::exception_ptr exception{};
    /// The message's id: policies derive their jitter from (seed, message id, attempt), so the
    /// same message gets the same schedule on every consumer and after a restart.
    std::string_view message_id{};
};

/// A retry policy: a copyable value that decides what happens after a failed attempt, and
/// never runs anything itself (MassTransit's split between `IRetryPolicy` and the filter that
/// applies it; `letterbox::middleware` applies the decision).
///
/// Requirements, for `p` of type `const P&` and `f` of type `const attempt_failure&`:
/// 1. `P` is copy constructible: policies are values, copied into each pipeline.
/// 2. `p.decide(f)` returns a `retry_decision`.
/// 3. `p.max_attempts()` returns a `std::uint32_t`: the total number of attempts, **including
///    the first**, that the policy allows for one message; at least 1.
/// 4. `p.horizon()` returns a `std::chrono::milliseconds`: an upper bound of the sum of all
///    the delays the policy can schedule for one message (with any jitter at its maximum).
///    The pipeline builder compares it with the inbox retention (DESIGN §3.8).
///
/// Semantics (not checked by the compiler):
/// - `decide` is deterministic: the same policy value and the same failure (attempt, error,
///   exception type, message id) give the same decision, on every run and every platform.
///   Jitter comes from a seed held in the policy, never from a global generator or the time.
/// - A failure the policy classifies as permanent gives `retry_decision::permanent_failure()`
///   without retrying, whatever the attempt number.
/// - `decide` retries only while `f.attempt < p.max_attempts()`; from `max_attempts()` on it
///   gives up (`retry_decision::exhausted()` for a transient failure).
/// - Every delay is non-negative, and the delays `decide` returns for attempts
///   `1 .. max_attempts() - 1` of one message add up to at most `horizon()`.
/// - `decide`, `max_attempts` and `horizon` are `const` and may be called concurrently.
///
/// Does not require: state changes on `decide` (it is `const`), default construction,
/// assignability, `noexcept`, any particular schedule, a seed or a failure classifier. The
/// policy does not choose *where* the retry happens (in-process or through the broker).
///
/// Models: `backoff::none`, `backoff::immediate`, `backoff::fixed`, `backoff::exponential`
/// (`letterbox/backoff/`). Archetype: `letterbox::testing::retry_policy_archetype`.
template <class P>
concept retry_policy = std::copy_constructible<P> &&
    requires(const P& p, const attempt_failure& f) {
    { p.decide(f) } -> std::same_as<retry_decision>;
    { p.max_attempts() } -> std::same_as<std::uint32_t>;
    { p.horizon() } -> std::same_as<std::chrono::milliseconds>;
};

} // namespace letterbox
