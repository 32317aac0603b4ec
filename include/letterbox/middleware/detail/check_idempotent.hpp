// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/detail/check_clock.hpp>
#include <letterbox/concepts/detail/check_handler.hpp>
#include <letterbox/concepts/detail/check_inbox_store.hpp>
#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/awaitable_of.hpp>
#include <letterbox/message.hpp>
#include <letterbox/middleware/after_call.hpp>

#include <concepts>
#include <type_traits>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {

/// Checks `effect(args...)`, an effect inside a unit of work of type `Unit`.
template <class Effect, class Unit, class... Args>
consteval bool check_effect() {
    if constexpr (std::invocable<Effect&, Args...>) {
        static_assert(
            letterbox::detail::check_handler_result<std::invoke_result_t<Effect&, Args...>>());
    } else {
        static_assert(std::invocable<Effect&, Args...>,
                      "letterbox::idempotent: the effect must be callable as "
                      "`effect(const letterbox::message&, unit_of_work&)` (after a call: "
                      "`effect(const letterbox::message&, const result&, unit_of_work&)`), with "
                      "the inbox store's unit_of_work_type: it stages its writes in that unit, "
                      "which idempotent commits together with the inbox record");
    }
    return true;
}

/// Checks `after_call(call, effect)`: the call is asynchronous, and the effect takes its result.
template <class Call, class Effect, class Unit>
consteval bool check_after_call() {
    using token = const letterbox::detail::awaitable_token&;
    constexpr bool coroutine =
        std::invocable<Call&, const message&> &&
        letterbox::detail::is_awaitable<std::invoke_result_t<Call&, const message&>>;
    constexpr bool operation = requires(Call & c, const message& m, token t) {
        c(m, t);
    };
    static_assert(coroutine || operation,
                  "letterbox::after_call: the call must be a coroutine, `call(const "
                  "letterbox::message&)` returning an asio::awaitable<T>, or an asynchronous "
                  "operation, `call(const letterbox::message&, token)` completing with "
                  "`void(error_code, T)` or `void(error_code)`");
    if constexpr (coroutine || operation) {
        using result = call_result_t<Call>;
        if constexpr (std::is_void_v<result>)
            static_assert(check_effect<Effect, Unit, const message&, Unit&>());
        else
            static_assert(check_effect<Effect, Unit, const message&, const result&, Unit&>());
    }
    return true;
}

/// Checks the arguments of `idempotent(effect, inbox, begin, consumer_id, clock)` one
/// requirement at a time, each with a message that names what is missing (see
/// `letterbox::detail::check_transport`).
template <class Inbox, class Begin, class Effect, class Clock>
consteval bool check_idempotent() {
    static_assert(letterbox::detail::check_inbox_store<Inbox>());
    static_assert(letterbox::detail::check_clock<Clock>());
    if constexpr (has_unit_of_work<Inbox>) {
        using unit = typename Inbox::unit_of_work_type;
        static_assert(
            requires(Begin & begin) {
                { begin() } -> std::same_as<unit>;
            },
            "letterbox::idempotent: `begin` must be callable with no argument and return the "
            "inbox store's unit_of_work_type, e.g. `[&] { return db.begin(); }`");
        if constexpr (is_after_call<Effect>)
            static_assert(
                check_after_call<decltype(Effect::call), decltype(Effect::effect), unit>());
        else
            static_assert(check_effect<Effect, unit, const message&, unit&>());
    }
    return true;
}

} // namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail
