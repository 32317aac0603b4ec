// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <concepts>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

namespace detail {
struct timer_wait_archetype_handler {
    void operator()(boost::system::error_code) const {}
};
} // namespace detail

/// A timer with the waiting interface of Asio's `basic_waitable_timer`.
///
/// Requirements, for a timer `t` of type `T`:
/// 1. `t.expires_at(tp)` and `t.expires_after(d)` set the expiry (cancelling pending waits);
/// 2. `t.cancel()` completes pending waits with `operation_aborted`;
/// 3. `t.async_wait(token)` completes with `void(boost::system::error_code)` at expiry;
/// 4. it is move-constructible (components hold timers by value).
template <class T>
concept waitable_timer = std::move_constructible<T> &&
    requires(T& t, typename T::time_point tp, typename T::duration d) {
    t.expires_at(tp);
    t.expires_after(d);
    t.cancel();
    t.async_wait(detail::timer_wait_archetype_handler{});
};

/// A source of time and of timers, so that retries, TTLs, leases and timeouts can be simulated.
///
/// Requirements, for `c` of type `C&`:
/// 1. `C::duration` and `C::time_point` name a `std::chrono` duration and time point;
/// 2. `c.now()` returns the current `C::time_point` (monotonic);
/// 3. `c.wall_now()` returns a `std::chrono::system_clock::time_point` for stamps that leave
///    the process (x-death times, store rows);
/// 4. `c.make_timer(ex)` returns a `waitable_timer` on that clock whose handlers run on `ex`.
///
/// Semantics: `now()` never goes backwards. A timer fires no earlier than its expiry as seen by
/// `now()`.
///
/// Does not require: a static `now()` (unlike Asio's clocks), thread safety, or a relation
/// between `now()` and real time.
///
/// Models: `steady_clock`, `virtual_clock`.
template <class C>
concept clock = requires(C& c, const C& cc, boost::asio::any_io_executor ex) {
    typename C::duration;
    typename C::time_point;
    { cc.now() } -> std::same_as<typename C::time_point>;
    { cc.wall_now() } -> std::convertible_to<std::chrono::system_clock::time_point>;
    { c.make_timer(ex) } -> waitable_timer;
};

} // namespace letterbox
