// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/config.hpp>

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

/// Checks `R`, what a handler or an effect returns (see `check_transport`).
template <class R>
consteval bool check_handler_result() {
    static_assert(!awaitable_result<R>,
                  "letterbox: the handler is a coroutine (it returns an awaitable). Handlers "
                  "and effects are synchronous: do the work and return void or "
                  "std::error_code (docs/concepts/handler.md)");
    static_assert(awaitable_result<R> || std::is_void_v<R> || std::same_as<R, std::error_code>,
                  "letterbox: a handler or an effect returns void or std::error_code (empty "
                  "for success). This one returns another type (a bool?): return `{}` on "
                  "success, and an error code or an exception on failure");
    return true;
}

/// Checks `H` as what a consumer or a middleware layer takes: a `handler` of
/// `const message&`, or a `delivery_handler` of `const middleware::handling&` (what
/// `middleware::compose` builds). See `check_transport`.
template <class H>
consteval bool check_handler() {
    if constexpr (std::invocable<H&, const message&>) {
        return check_handler_result<std::invoke_result_t<H&, const message&>>();
    } else if constexpr (std::invocable<H&, const middleware::handling&>) {
        static_assert(std::same_as<std::invoke_result_t<H&, const middleware::handling&>,
                                   middleware::disposition>,
                      "letterbox::delivery_handler: a handler of `const "
                      "letterbox::middleware::handling&` returns a middleware::disposition");
        return true;
    } else {
        static_assert(std::invocable<H&, const message&>,
                      "letterbox: the handler must be callable as `h(const letterbox::message&)`, "
                      "or as `h(const letterbox::middleware::handling&)` (a pipeline built with "
                      "middleware::compose). This one is neither: check its parameter type, and "
                      "that it can be called as a non-const lvalue");
        return true;
    }
}

} // namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail
