// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The real clock: `std::chrono::steady_clock` for durations and deadlines, the system clock
/// for wall-time stamps, and Asio's `basic_waitable_timer` for waiting. A model of `clock`.
///
/// It is stateless, so copies are interchangeable.
struct steady_clock {
    using duration = std::chrono::steady_clock::duration;
    using time_point = std::chrono::steady_clock::time_point;

    /// The timer type for an executor type.
    template <class Executor = boost::asio::any_io_executor>
    using timer_type = boost::asio::basic_waitable_timer<
        std::chrono::steady_clock, boost::asio::wait_traits<std::chrono::steady_clock>, Executor>;

    time_point now() const noexcept { return std::chrono::steady_clock::now(); }

    /// Wall time, for timestamps that leave the process (x-death, store rows).
    std::chrono::system_clock::time_point wall_now() const noexcept {
        return std::chrono::system_clock::now();
    }

    /// A timer that waits on this clock, running its handlers on `ex`.
    template <class Executor>
    timer_type<Executor> make_timer(const Executor& ex) const {
        return timer_type<Executor>(ex);
    }
};

} // namespace letterbox
