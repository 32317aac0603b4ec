// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/dlq/depth_gauge.hpp>
#include <letterbox/error.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

namespace detail {

template <class Transport, class Clock>
class gauge_engine : public std::enable_shared_from_this<gauge_engine<Transport, Clock>> {
public:
    gauge_engine(Transport& transport, Clock& clock, std::string queue, depth_gauge_options options)
        : transport_(transport)
        , queue_(std::move(queue))
        , options_(std::move(options))
        , ex_(transport.get_executor())
        , timer_(clock.make_timer(ex_)) {}

    const std::string& queue() const noexcept { return queue_; }

    void start() {
        if (running_)
            return;
        running_ = true;
        const auto generation = ++generation_;
        boost::asio::post(ex_, [weak = this->weak_from_this(), generation] {
            if (auto self = weak.lock(); self && self->current(generation))
                self->poll(generation);
        });
    }

    void stop() {
        if (!running_)
            return;
        running_ = false;
        ++generation_;
        timer_.cancel();
    }

    std::optional<std::uint32_t> value() const noexcept {
        const auto v = value_.load(std::memory_order_acquire);
        if (v < 0)
            return std::nullopt;
        return static_cast<std::uint32_t>(v);
    }
    std::uint64_t failed_polls() const noexcept { return failed_.load(std::memory_order_relaxed); }
    bool above() const noexcept { return above_.load(std::memory_order_acquire); }

private:
    using timer_type = decltype(std::declval<Clock&>().make_timer(
        std::declval<const boost::asio::any_io_executor&>()));

    // Completions of a stopped (or stopped and restarted) gauge carry an old generation and
    // are ignored.
    bool current(std::uint64_t generation) const noexcept {
        return running_ && generation == generation_;
    }

    void poll(std::uint64_t generation) {
        transport_.async_queue_depth(queue_, [weak = this->weak_from_this(),
                                              generation](std::error_code ec, std::uint32_t depth) {
            if (auto self = weak.lock(); self && self->current(generation))
                self->on_depth(generation, ec, depth);
        });
    }

    void on_depth(std::uint64_t generation, std::error_code ec, std::uint32_t depth) {
        if (ec) {
            failed_.fetch_add(1, std::memory_order_relaxed);
        } else {
            value_.store(depth, std::memory_order_release);
            if (options_.threshold)
                cross(depth);
        }
        // The callback may have stopped the gauge.
        if (current(generation))
            arm(generation);
    }

    void cross(std::uint32_t depth) {
        const bool was_above = above_.load(std::memory_order_relaxed);
        const bool is_above = depth >= *options_.threshold;
        if (was_above == is_above)
            return;
        above_.store(is_above, std::memory_order_release);
        if (options_.on_threshold)
            options_.on_threshold(is_above, depth);
    }

    void arm(std::uint64_t generation) {
        using timer_duration = typename timer_type::duration;
        timer_.expires_after(std::chrono::ceil<timer_duration>(options_.interval));
        timer_.async_wait(
            [weak = this->weak_from_this(), generation](boost::system::error_code ec) {
                if (ec)
                    return;
                if (auto self = weak.lock(); self && self->current(generation))
                    self->poll(generation);
            });
    }

    Transport& transport_;
    const std::string queue_;
    const depth_gauge_options options_;
    boost::asio::any_io_executor ex_;
    timer_type timer_;
    bool running_ = false;
    std::uint64_t generation_ = 0;
    std::atomic<std::int64_t> value_{-1};
    std::atomic<std::uint64_t> failed_{0};
    std::atomic<bool> above_{false};
};

} // namespace detail

template <queue_reader Transport, clock Clock>
depth_gauge<Transport, Clock>::depth_gauge(Transport& transport, Clock& clock, std::string queue,
                                           depth_gauge_options options) {
    if (options.interval <= std::chrono::milliseconds::zero())
        throw letterbox::error(errc::invalid_argument,
                               "depth_gauge_options::interval must be positive");
    engine_ = std::make_shared<detail::gauge_engine<Transport, Clock>>(
        transport, clock, std::move(queue), std::move(options));
}

template <queue_reader Transport, clock Clock>
depth_gauge<Transport, Clock>::~depth_gauge() {
    engine_->stop();
}

template <queue_reader Transport, clock Clock>
void depth_gauge<Transport, Clock>::start() {
    engine_->start();
}

template <queue_reader Transport, clock Clock>
void depth_gauge<Transport, Clock>::stop() {
    engine_->stop();
}

template <queue_reader Transport, clock Clock>
std::optional<std::uint32_t> depth_gauge<Transport, Clock>::value() const noexcept {
    return engine_->value();
}

template <queue_reader Transport, clock Clock>
std::uint64_t depth_gauge<Transport, Clock>::failed_polls() const noexcept {
    return engine_->failed_polls();
}

template <queue_reader Transport, clock Clock>
bool depth_gauge<Transport, Clock>::above() const noexcept {
    return engine_->above();
}

template <queue_reader Transport, clock Clock>
const std::string& depth_gauge<Transport, Clock>::queue() const noexcept {
    return engine_->queue();
}

} // namespace letterbox::dlq
