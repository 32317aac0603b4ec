// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/awaitable_of.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/handling.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// An asynchronous delivery handler: what middleware makes of an `async_handler`.
///
/// Requirements, for `h` of type `H&` and `x` of type `const middleware::handling&`: `h(x)`
/// returns `asio::awaitable<middleware::disposition>`.
///
/// Semantics: those of `delivery_handler` when the awaitable completes. The `handling`'s
/// delivery stays alive until then (the consumer holds it).
///
/// Models: what `middleware::retry`, `middleware::redelivery`, `middleware::dead_letter` and
/// `middleware::compose` make of an `async_handler`.
template <class H>
concept async_delivery_handler =
    detail::async_call_of<H,
                          const middleware::handling&>::template coroutine<middleware::disposition>;

} // namespace letterbox
