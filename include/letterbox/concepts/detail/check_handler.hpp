// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/async_delivery_handler.hpp>
#include <letterbox/concepts/async_handler.hpp>
#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/awaitable_of.hpp>

#include <concepts>
#include <system_error>
#include <type_traits>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// `R` is what a coroutine returns (an awaitable such as `asio::awaitable<T>`), not a result.
template <class R>
concept awaitable_result = requires(R& r) {
    r.await_ready();
}
|| requires(R& r) {
    r.operator co_await();
};

/// Checks `R`, what a handler or an effect returns (see `check_transport`). `Async`: a
/// coroutine is allowed (a handler, not an effect inside a unit of work).
template <class R, bool Async = false>
consteval bool check_handler_result() {
    if constexpr (awaitable_result<R>) {
        static_assert(!Async || is_awaitable_of<R, void, std::error_code>,
                      "letterbox: a coroutine handler returns asio::awaitable<void> or "
                      "asio::awaitable<std::error_code> (empty for success), and an exception "
                      "or an error code on failure. This one returns another awaitable (of a "
                      "bool? a value?), or one of another library (docs/async-handlers.md)");
        static_assert(Async,
                      "letterbox: this effect is a coroutine (it returns an awaitable). An "
                      "effect runs inside the unit of work, which must not wait: make the slow "
                      "call first with middleware::after_call(call, effect), and keep the effect "
                      "synchronous (docs/async-handlers.md)");
    } else {
        static_assert(std::is_void_v<R> || std::same_as<R, std::error_code>,
                      "letterbox: a handler or an effect returns void or std::error_code (empty "
                      "for success). This one returns another type (a bool?): return `{}` on "
                      "success, and an error code or an exception on failure");
    }
    return true;
}

/// Checks `H` as what a consumer or a middleware layer takes: a `handler` or an
/// `async_handler` of `const message&`, or a `delivery_handler` or an
/// `async_delivery_handler` of `const middleware::handling&` (what `middleware::compose`
/// builds). See `check_transport`.
template <class H>
consteval bool check_handler() {
    using token = const awaitable_token&;
    if constexpr (std::invocable<H&, const message&>) {
        return check_handler_result<std::invoke_result_t<H&, const message&>, true>();
    } else if constexpr (std::invocable<H&, const middleware::handling&>) {
        using result = std::invoke_result_t<H&, const middleware::handling&>;
        static_assert(std::same_as<result, middleware::disposition> ||
                          is_awaitable_of<result, middleware::disposition>,
                      "letterbox::delivery_handler: a handler of `const "
                      "letterbox::middleware::handling&` returns a middleware::disposition (or, "
                      "as a coroutine, an asio::awaitable<middleware::disposition>)");
        return true;
    } else if constexpr (std::invocable<H&, const message&, token>) {
        static_assert(
            is_awaitable_of<std::invoke_result_t<H&, const message&, token>, void, std::error_code>,
            "letterbox: a handler that takes a completion token must complete with "
            "`void(boost::system::error_code)` or `void(std::error_code)`, so that "
            "asio::use_awaitable makes it an asio::awaitable<void> (or of an "
            "error_code)");
        return true;
    } else {
        static_assert(std::invocable<H&, const message&>,
                      "letterbox: the handler must be callable as `h(const letterbox::message&)` "
                      "(returning void, std::error_code or an asio::awaitable of one), as "
                      "`h(const letterbox::message&, token)` (an asynchronous operation), or as "
                      "`h(const letterbox::middleware::handling&)` (a pipeline built with "
                      "middleware::compose). This one is none of them: check its parameter type, "
                      "and that it can be called as a non-const lvalue");
        return true;
    }
}

} // namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail
