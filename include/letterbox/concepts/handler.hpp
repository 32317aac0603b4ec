// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <concepts>
#include <system_error>
#include <type_traits>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A message handler: application code that applies one message's effect.
///
/// Requirements, for `h` of type `H&` and `m` of type `const message&`:
/// 1. `h(m)` is valid;
/// 2. it returns `void` or `std::error_code`.
///
/// Semantics: success is returning normally (or an empty `error_code`). Failure is an
/// exception or a non-empty `error_code`; the retry policy classifies it as transient or
/// permanent. A handler may run more than once for one message (at-least-once delivery); wrap
/// it in the idempotent middleware to apply its effect once.
///
/// Does not require: copyability, thread safety, or that the handler settles the delivery
/// (the consumer does that from the outcome).
///
/// Middleware maps a handler to a handler, so handlers compose (DESIGN §3.6).
template <class H>
concept handler = std::invocable<H&, const message&> &&
    (std::is_void_v<std::invoke_result_t<H&, const message&>> ||
     std::same_as<std::invoke_result_t<H&, const message&>, std::error_code>);

} // namespace letterbox
