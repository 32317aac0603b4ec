// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/dlq/depth_gauge_options.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

namespace detail {
template <class Transport, class Clock>
class gauge_engine;
} // namespace detail

/// Watches the depth of a queue (a dead-letter queue, typically): polls
/// `async_queue_depth` every `interval` on a timer of `Clock`, keeps the last value for
/// metrics, and calls `on_threshold` when the depth crosses `threshold` (edge-triggered: once
/// on the way up, once on the way down; see `depth_gauge_options`).
///
/// A poll starts `interval` after the previous one completed, so polls never overlap. A failed
/// poll (a missing queue, a lost connection) keeps the last value, counts in `failed_polls()`
/// and does not change the threshold state; polling goes on.
///
/// Lifetime: the transport and the clock must outlive the gauge. The destructor stops it.
///
/// Thread safety: `value()` and `failed_polls()` may be called from any thread. `start()`,
/// `stop()` and the destructor must be called on the transport's executor or while it runs
/// nothing (they touch the timer).
///
/// @tparam Transport a model of `queue_reader`.
/// @tparam Clock a model of `clock` (`steady_clock`, or `virtual_clock` in tests).
///
/// Example (an alert when ten or more messages are dead-lettered):
///
///     letterbox::dlq::depth_gauge_options o;
///     o.interval = std::chrono::seconds{30};
///     o.threshold = 10;
///     o.on_threshold = [](bool above, std::uint32_t depth) {
///         if (above)
///             alert("orders.dlq holds " + std::to_string(depth) + " messages");
///         else
///             resolve("orders.dlq is back to " + std::to_string(depth));
///     };
///     letterbox::dlq::depth_gauge gauge(transport, clock, "orders.dlq", o);
///     gauge.start();
///     // metrics: gauge.value() (std::nullopt until the first poll succeeded)
template <queue_reader Transport, clock Clock>
class depth_gauge {
public:
    /// A stopped gauge. Throws `letterbox::error` (`errc::invalid_argument`) when
    /// `options.interval` is not positive.
    depth_gauge(Transport& transport, Clock& clock, std::string queue,
                depth_gauge_options options = {});
    depth_gauge(const depth_gauge&) = delete;
    depth_gauge& operator=(const depth_gauge&) = delete;
    ~depth_gauge();

    /// Starts polling (the first poll is posted at once). Does nothing when running.
    void start();
    /// Stops polling; the outcome of a poll in flight is ignored. Idempotent; `start()` may
    /// follow.
    void stop();

    /// The depth the last successful poll saw; `std::nullopt` before the first one.
    std::optional<std::uint32_t> value() const noexcept;
    /// How many polls failed since the gauge was made.
    std::uint64_t failed_polls() const noexcept;
    /// Whether the last threshold crossing was upwards.
    bool above() const noexcept;

    const std::string& queue() const noexcept;

private:
    std::shared_ptr<detail::gauge_engine<Transport, Clock>> engine_;
};

} // namespace letterbox::dlq

#include <letterbox/dlq/impl/depth_gauge.hpp>
