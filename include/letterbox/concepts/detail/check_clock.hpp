// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/config.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <concepts>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Checks `C` against `clock` one requirement at a time (see `check_transport`).
template <class C>
consteval bool check_clock() {
    static_assert(
        requires {
            typename C::duration;
            typename C::time_point;
        },
        "letterbox::clock: missing `duration` or `time_point` (std::chrono types). Use "
        "letterbox::steady_clock, or letterbox::virtual_clock in tests");
    static_assert(
        requires(const C& c) {
            { c.now() } -> std::same_as<typename C::time_point>;
        },
        "letterbox::clock: missing `time_point now() const`");
    static_assert(
        requires(const C& c) {
            { c.wall_now() } -> std::convertible_to<std::chrono::system_clock::time_point>;
        },
        "letterbox::clock: missing `wall_now() const`, returning a "
        "std::chrono::system_clock::time_point");
    static_assert(
        requires(C & c, boost::asio::any_io_executor ex) {
            { c.make_timer(ex) } -> waitable_timer;
        },
        "letterbox::clock: missing `make_timer(executor)`, returning a timer with "
        "expires_at, expires_after, cancel and async_wait (as asio::steady_timer)");
    return true;
}

} // namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail
