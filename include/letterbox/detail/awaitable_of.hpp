// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <concepts>
#include <functional>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Whether `R` is `boost::asio::awaitable<T>` (with any executor) for one of the `T...`.
template <class R, class... T>
inline constexpr bool is_awaitable_of = false;
template <class V, class Executor, class... T>
inline constexpr bool
    is_awaitable_of<boost::asio::awaitable<V, Executor>, T...> = (std::same_as<V, T> || ...);

/// Whether `R` is `boost::asio::awaitable<V>`, of any `V` and executor.
template <class R>
inline constexpr bool is_awaitable = false;
template <class V, class Executor>
inline constexpr bool is_awaitable<boost::asio::awaitable<V, Executor>> = true;

/// The value an `asio::awaitable<V>` gives (`V`); `void` for anything else.
template <class R>
struct awaited {
    using type = void;
};
template <class V, class Executor>
struct awaited<boost::asio::awaitable<V, Executor>> {
    using type = V;
};

/// The completion token a handler that takes one is called with.
using awaitable_token = boost::asio::use_awaitable_t<>;

/// How a handler of `Args...` is asynchronous: a coroutine (`h(args...)` returns
/// `asio::awaitable<R>`), or an asynchronous operation (`h(args..., token)`, which
/// `asio::use_awaitable` makes an `asio::awaitable<R>`). `R` is one of `T...`.
template <class H, class... Args>
struct async_call_of {
    template <class... T>
    static constexpr bool coroutine = [] {
        if constexpr (std::invocable<H&, Args...>)
            return is_awaitable_of<std::invoke_result_t<H&, Args...>, T...>;
        else
            return false;
    }();
    template <class... T>
    static constexpr bool operation = [] {
        if constexpr (!std::invocable<H&, Args...> &&
                      std::invocable<H&, Args..., const awaitable_token&>)
            return is_awaitable_of<std::invoke_result_t<H&, Args..., const awaitable_token&>, T...>;
        else
            return false;
    }();
    template <class... T>
    static constexpr bool either = coroutine<T...> || operation<T...>;
};

/// Starts `h(args...)` as an awaitable: the coroutine as it is, the asynchronous operation with
/// `asio::use_awaitable` (its `boost::system::error_code` thrown as `system_error`).
template <class H, class... Args>
auto await_call(H& h, Args&&... args) {
    if constexpr (std::invocable<H&, Args...>)
        return std::invoke(h, std::forward<Args>(args)...);
    else
        return std::invoke(h, std::forward<Args>(args)..., boost::asio::use_awaitable);
}

} // namespace letterbox::detail
