// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/awaitable_of.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/message.hpp>

#include <boost/asio/awaitable.hpp>

#include <exception>
#include <functional>
#include <optional>
#include <system_error>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// `H` is asynchronous: an `async_handler` of the message, or an `async_delivery_handler`
/// (spelled here with the vocabulary alone, as `decides_handling` is).
template <class H>
concept runs_async =
    async_call_of<H, const message&>::template either<void, std::error_code> ||
    async_call_of<H, const middleware::handling&>::template coroutine<middleware::disposition>;

/// The coroutine of `run_inner_async`. A static member rather than a function template: g++
/// warns (`-Wsubobject-linkage`) when a free coroutine template's frame holds a reference to a
/// handler of internal linkage, such as a lambda in an unnamed namespace, defined outside the
/// main file (in a header, or in a unity build); a member's frame is exempt.
template <class H>
struct async_runner {
    static boost::asio::awaitable<middleware::disposition> run(H& h, middleware::handling x) {
        std::optional<middleware::disposition> r;
        try {
            if constexpr (async_call_of<H, const middleware::handling&>::template coroutine<
                              middleware::disposition>) {
                r = co_await std::invoke(h, x);
            } else {
                using result = typename awaited<decltype(await_call(h, x.d.msg))>::type;
                if constexpr (std::is_void_v<result>) {
                    co_await await_call(h, x.d.msg);
                    r = middleware::disposition::ack();
                } else {
                    const std::error_code ec = co_await await_call(h, x.d.msg);
                    r = ec ? middleware::disposition::fail(failure_of(ec))
                           : middleware::disposition::ack();
                }
            }
        } catch (...) {
            r = middleware::disposition::fail(current_failure());
        }
        co_return std::move(*r);
    }

    static boost::asio::awaitable<middleware::disposition> run_sync(H& h, middleware::handling x) {
        co_return run_inner(h, x);
    }
};

/// `run_inner` for an asynchronous handler: runs `h` once for `x` and gives its disposition, with
/// its exceptions and error codes turned into `middleware::disposition::fail`. `x` is taken by
/// value (its delivery must outlive the wait: the consumer holds it). A synchronous `h` runs
/// as `run_inner` runs it.
template <class H>
boost::asio::awaitable<middleware::disposition> run_inner_async(H& h, middleware::handling x) {
    if constexpr (runs_async<H>)
        return async_runner<H>::run(h, x);
    else
        return async_runner<H>::run_sync(h, x);
}

} // namespace letterbox::detail
