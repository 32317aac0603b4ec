// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/config.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

struct clock_archetype;

namespace detail {
/// An Asio initiation that starts nothing: the timer archetype's waits never complete.
struct noop_wait_initiation {
    template <class Handler>
    void operator()(Handler&&) const {}
};
} // namespace detail

/// Exactly what `letterbox::waitable_timer` requires, with trivial bodies. Its waits never
/// complete.
//[waitable_timer_archetype
struct waitable_timer_archetype {
    using duration = std::chrono::nanoseconds;
    using time_point = std::chrono::time_point<clock_archetype, duration>;

    void expires_at(time_point) {}
    void expires_after(duration) {}
    void cancel() {}
    template <class Token>
    auto async_wait(Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            detail::noop_wait_initiation{}, token);
    }
};
//]

/// Exactly what `letterbox::clock` requires, with trivial bodies: generic code instantiated
/// with it proves it uses nothing else. It is not copyable, movable or default-constructible
/// (`virtual_clock` is not copyable either): generic code holds a clock by reference.
//[clock_archetype
struct clock_archetype {
    using duration = std::chrono::nanoseconds;
    using time_point = std::chrono::time_point<clock_archetype, duration>;

    clock_archetype(const clock_archetype&) = delete;

    time_point now() const { return {}; }
    std::chrono::system_clock::time_point wall_now() const { return {}; }
    waitable_timer_archetype make_timer(const boost::asio::any_io_executor&) { return {}; }
};
//]

} // namespace letterbox::testing
