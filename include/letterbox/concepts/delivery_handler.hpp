// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/handling.hpp>

#include <concepts>
#include <type_traits>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A delivery handler: what middleware makes of a `handler`. It sees the whole delivery (its
/// queue, its redelivered flag, its headers) and returns a `middleware::disposition`, the
/// decision of what to do with it, which a `letterbox::consumer` carries out.
///
/// Requirements, for `h` of type `H&` and `x` of type `const middleware::handling&`:
/// 1. `h(x)` is valid;
/// 2. it returns `middleware::disposition`.
///
/// Semantics: it decides and does nothing else. It never settles the delivery nor publishes
/// (the consumer does both from the disposition), so running it twice on the same input
/// only repeats the wrapped handler's work. Exceptions from the wrapped handler are turned
/// into `disposition::fail`; one that escapes a delivery handler is a bug, and the consumer
/// treats it as a failure with `errc::internal_error`.
///
/// Does not require: copyability or thread safety.
///
/// Models: what `middleware::retry`, `middleware::redelivery`, `middleware::dead_letter` and
/// `middleware::compose` return.
template <class H>
concept delivery_handler = std::invocable<H&, const middleware::handling&> &&
    std::same_as<std::invoke_result_t<H&, const middleware::handling&>, middleware::disposition>;

} // namespace letterbox
