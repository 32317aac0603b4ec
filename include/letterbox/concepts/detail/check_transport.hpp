// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>

#include <concepts>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Checks `T` against `transport` one requirement at a time, each with a `static_assert` that
/// names the missing piece and the fix, so that a class template over a transport (a
/// consumer, a relay) says what is wrong instead of "constraints not satisfied". True when
/// every requirement holds; a compile error otherwise.
template <class T>
consteval bool check_transport() {
    static_assert(transport_opted_in<T>,
                  "letterbox::transport: the type does not opt in. A transport declares "
                  "`using transport_concept = letterbox::transport_tag;` once it keeps the "
                  "contract of docs/concepts/transport.md");
    static_assert(std::movable<T>, "letterbox::transport: the type must be movable");
    static_assert(
        requires(T & t) {
            typename T::executor_type;
            { t.get_executor() } -> std::convertible_to<typename T::executor_type>;
        },
        "letterbox::transport: missing `executor_type` or `get_executor()`");
    static_assert(
        requires(T & t, const topology::exchange& x) { t.async_declare(x, error_completion{}); },
        "letterbox::transport: missing `async_declare(const topology::exchange&, token)`, "
        "completing with void(error_code)");
    static_assert(
        requires(T & t, const topology::queue& q) { t.async_declare(q, error_completion{}); },
        "letterbox::transport: missing `async_declare(const topology::queue&, token)`, "
        "completing with void(error_code)");
    static_assert(
        requires(T & t, const topology::binding& b) { t.async_bind(b, error_completion{}); },
        "letterbox::transport: missing `async_bind(const topology::binding&, token)`, "
        "completing with void(error_code)");
    static_assert(publisher<T>, "letterbox::transport: missing `async_publish(const message&, "
                                "token)`, completing with void(error_code)");
    static_assert(
        requires(T & t, const consume_options& o) {
            t.async_consume(o, delivery_sink{}, consume_completion{});
        },
        "letterbox::transport: missing `async_consume(const consume_options&, on_delivery, "
        "token)`, completing with void(error_code, std::string consumer_tag)");
    static_assert(
        requires(T & t, const std::string& tag) { t.async_cancel(tag, error_completion{}); },
        "letterbox::transport: missing `async_cancel(const std::string& tag, token)`, "
        "completing with void(error_code)");
    static_assert(
        requires(T & t, const delivery& d) { t.async_ack(d, error_completion{}); },
        "letterbox::transport: missing `async_ack(const delivery&, token)`, completing with "
        "void(error_code)");
    static_assert(
        requires(T & t, const delivery& d, bool requeue) {
            t.async_nack(d, requeue, error_completion{});
        },
        "letterbox::transport: missing `async_nack(const delivery&, bool requeue, token)`, "
        "completing with void(error_code)");
    static_assert(
        requires(T & t, const delivery& d, bool requeue) {
            t.async_reject(d, requeue, error_completion{});
        },
        "letterbox::transport: missing `async_reject(const delivery&, bool requeue, token)`, "
        "completing with void(error_code)");
    static_assert(
        requires(T & t) { t.async_close(error_completion{}); },
        "letterbox::transport: missing `async_close(token)`, completing with void(error_code)");
    return true;
}

} // namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail
