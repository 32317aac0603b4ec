// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/awaitable_of.hpp>
#include <letterbox/message.hpp>

#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// An asynchronous message handler: a `handler` that waits for something (an HTTP call, a
/// timer) without holding its thread.
///
/// Requirements, for `h` of type `H&`, `m` of type `const message&` and `token` of type
/// `const asio::use_awaitable_t<>&`, one of:
/// 1. a coroutine: `h(m)` returns `asio::awaitable<void>` or `asio::awaitable<std::error_code>`;
/// 2. an asynchronous operation: `h(m)` is not valid, and `h(m, token)` returns one of those
///    (a function that takes a completion token and completes with `void(error_code)`).
///
/// Semantics: those of `handler`, when the awaitable completes: success is completing normally
/// (or with an empty `error_code`), failure an exception (what `use_awaitable` throws for a
/// `boost::system::error_code`) or a non-empty `error_code`. A consumer runs it on the
/// executor the handler runs on (the transport's, or `consumer_options::handler_executor`),
/// and settles the delivery when it completes; the middleware layers wrap it as they wrap a
/// `handler` (docs/async-handlers.md).
///
/// Does not require: copyability or thread safety.
template <class H>
concept async_handler =
    detail::async_call_of<H, const message&>::template either<void, std::error_code>;

} // namespace letterbox
