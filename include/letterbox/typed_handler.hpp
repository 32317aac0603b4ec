// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/awaitable_of.hpp>
#include <letterbox/message.hpp>
#include <letterbox/payload.hpp>

#include <concepts>
#include <functional>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A handler of `T` payloads: it decodes each message's JSON body into a `T` with the type's
/// nlohmann `from_json`, then calls `f` with it. See `typed`.
template <class T, class F>
class typed_handler {
public:
    explicit typed_handler(F f)
        : f_(std::move(f)) {}

    /// Decodes `m` and calls `f(value, more...)`, or `f(value, m, more...)` when `f` wants
    /// the message too. `more` is what the caller passes on: nothing for a plain `handler`, the
    /// unit of work for an idempotent effect. A payload that does not decode throws
    /// `letterbox::error` (`payload_malformed` or `payload_type_mismatch`, with the decoder's
    /// text), a permanent failure: dead-lettered, never retried, and `f` does not run.
    template <class... More>
        requires std::invocable<F&, const T&, More&...> ||
            std::invocable<F&, const T&, const message&, More&...>
    decltype(auto) operator()(const message& m, More&... more) {
        if constexpr (detail::is_awaitable<decltype(call(std::declval<const T&>(), m, more...))>)
            return call_async(m, more...);
        else
            return call(decode_payload<T>(m), m, more...);
    }

    /// The function it calls.
    const F& function() const noexcept { return f_; }

private:
    template <class... More>
    decltype(auto) call(const T& value, const message& m, More&... more) {
        if constexpr (std::invocable<F&, const T&, const message&, More&...>)
            return std::invoke(f_, value, m, more...);
        else
            return std::invoke(f_, value, more...);
    }

    // A coroutine `f` keeps its `const T&` while it waits: the value lives in this frame.
    template <class... More>
    auto call_async(const message& m, More&... more)
        -> decltype(call(std::declval<const T&>(), m, more...)) {
        const T value = decode_payload<T>(m);
        co_return co_await call(value, m, more...);
    }

    F f_;
};

/// A handler that receives `T` values instead of raw messages: typed messages, as MassTransit's
/// `IConsumer<T>` or Watermill's CQRS handlers have them. `f` takes `const T&` first, then
/// optionally the `const message&` (for its id, headers or routing key), then what the
/// handler is given: nothing when the consumer runs it, the unit of work when the idempotent
/// middleware does. It returns `void` or `std::error_code`, as any handler, or is a coroutine
/// that returns `asio::awaitable` of one (an `async_handler`).
///
///     auto h = letterbox::typed<order>([&](const order& o, letterbox::sqlite::unit_of_work& u) {
///         insert_shipment(u.connection(), o.id);
///     });
///
/// The raw `message` handler stays: write one when a queue carries several types.
template <class T, class F>
typed_handler<T, std::decay_t<F>> typed(F&& f) {
    return typed_handler<T, std::decay_t<F>>(std::forward<F>(f));
}

} // namespace letterbox
