// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/unique_function.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

// The broker is not a template over its clock: it reads time through this small erased
// interface, in nanoseconds since the clock's epoch, so one broker type serves the steady and
// the virtual clock and compiles once.

class timer_adapter {
public:
    virtual ~timer_adapter() = default;
    /// Calls `f` once the clock reaches `deadline_ns` (never after a cancel or destruction).
    virtual void wait_until(std::int64_t deadline_ns,
                            letterbox::detail::unique_function<void()> f) = 0;
    virtual void cancel() = 0;
};

class clock_adapter {
public:
    virtual ~clock_adapter() = default;
    virtual std::int64_t now_ns() const = 0;
    virtual std::chrono::system_clock::time_point wall_now() const = 0;
    virtual std::unique_ptr<timer_adapter> make_timer() = 0;
};

template <class Timer, class TimePoint>
class timer_model final : public timer_adapter {
public:
    explicit timer_model(Timer t)
        : timer_(std::move(t)) {}

    void wait_until(std::int64_t deadline_ns,
                    letterbox::detail::unique_function<void()> f) override {
        using duration = typename TimePoint::duration;
        timer_.expires_at(
            TimePoint(std::chrono::duration_cast<duration>(std::chrono::nanoseconds(deadline_ns))));
        timer_.async_wait([f = std::move(f)](boost::system::error_code ec) mutable {
            if (!ec)
                f();
        });
    }

    void cancel() override { timer_.cancel(); }

private:
    Timer timer_;
};

template <letterbox::clock Clock>
class clock_model final : public clock_adapter {
public:
    clock_model(Clock& c, boost::asio::any_io_executor ex)
        : clock_(&c)
        , ex_(std::move(ex)) {}

    std::int64_t now_ns() const override {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   clock_->now().time_since_epoch())
            .count();
    }

    std::chrono::system_clock::time_point wall_now() const override { return clock_->wall_now(); }

    std::unique_ptr<timer_adapter> make_timer() override {
        using timer_t = decltype(clock_->make_timer(ex_));
        return std::make_unique<timer_model<timer_t, typename Clock::time_point>>(
            clock_->make_timer(ex_));
    }

private:
    Clock* clock_;
    boost::asio::any_io_executor ex_;
};

} // namespace letterbox::in_memory::detail
