// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/awaitable_of.hpp>
#include <letterbox/message.hpp>

#include <concepts>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// An effect that needs the result of a slow call first: what `after_call(call, effect)` makes,
/// for `idempotent` to run as "call, then commit".
template <class Call, class Effect>
struct after_call_effect {
    /// The slow call: `call(m)` returns `asio::awaitable<T>`, or `call(m, token)` is an
    /// asynchronous operation that completes with `void(error_code, T)` (or `void(error_code)`).
    Call call;
    /// The effect: `effect(m, result, u)` (`effect(m, u)` when the call gives nothing), inside
    /// the unit of work.
    Effect effect;
};

namespace detail {
template <class E>
inline constexpr bool is_after_call = false;
template <class Call, class Effect>
inline constexpr bool is_after_call<after_call_effect<Call, Effect>> = true;

/// What `call(m)` gives once awaited (`T` of its `asio::awaitable<T>`).
template <class Call>
using call_result_t = typename letterbox::detail::awaited<decltype(letterbox::detail::await_call(
    std::declval<Call&>(), std::declval<const message&>()))>::type;
} // namespace detail

/// The "call first, then commit" pattern, for an effect that needs a slow external call (an
/// HTTP API, a payment provider): `idempotent(after_call(call, effect), inbox, id, clock)`
/// handles each message in three steps, and holds no database lock while it waits:
///
/// 1. it looks the message's key up in the inbox, outside any unit of work: a message already
///    handled is acknowledged at once, and the call is not made again;
/// 2. it makes the call (`co_await`), with no unit of work open;
/// 3. it begins the unit, records the key in the inbox, runs `effect(m, result, u)` and commits,
///    as `idempotent` does for any effect.
///
/// The handler this gives is an `async_handler`: compose it with the layers as any other, and
/// the consumer waits for it without holding its thread.
///
/// What that means for idempotency: the effect is applied once, as with any effect, but the
/// call may be made more than once for one message. A failure after the call (the effect, the
/// commit, a crash) leaves no record, so the redelivery calls again; so do two copies of a
/// message handled at once, which both pass step 1 before either commits. Make the call
/// idempotent on the other side: pass the message's idempotency key (`m.id`) as the request's
/// key, as payment APIs accept. A call that fails fails the attempt: the retry layers retry it,
/// and nothing was recorded.
///
///     auto h = letterbox::middleware::idempotent(
///         letterbox::middleware::after_call(
///             [&](const letterbox::message& m, auto token) {
///                 return rates.async_quote(m.id, token); // completes with (error_code, quote)
///             },
///             [&](const letterbox::message& m, const quote& q, letterbox::sqlite::unit_of_work& u)
///             {
///                 save_quote(u.connection(), m, q);
///             }),
///         inbox, "pricing", clock);
template <class Call, class Effect>
after_call_effect<std::decay_t<Call>, std::decay_t<Effect>> after_call(Call&& call,
                                                                       Effect&& effect) {
    return {std::forward<Call>(call), std::forward<Effect>(effect)};
}

} // namespace letterbox::middleware
