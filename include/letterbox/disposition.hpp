// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/handler_failure.hpp>
#include <letterbox/message.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// What should happen to a delivery after a pipeline ran: the value a delivery handler
/// returns and a `letterbox::consumer` carries out. Middleware never settles or publishes
/// anything itself; it only turns one disposition into another, so a pipeline is a pure
/// function of the delivery and is tested without a broker.
///
/// | kind        | the consumer does                                                          |
/// |-------------|----------------------------------------------------------------------------|
/// | `ack`       | `basic.ack`                                                                |
/// | `fail`      | the consumer's last resort (`consumer_options::on_failure`)                |
/// | `retry_in`  | waits `delay` on its clock, keeping the delivery, then runs the pipeline   |
/// |             | again with `run + 1`                                                       |
/// | `reject`    | `basic.reject` without requeue: the queue's dead-letter exchange takes it  |
/// | `requeue`   | `basic.nack` with requeue                                                  |
/// | `forward`   | publishes `message` (mandatory, confirmed), and acks only after the        |
/// |             | confirm; if the publish fails, nacks with requeue so nothing is lost       |
class disposition {
public:
    enum class kind : std::uint8_t { ack, fail, retry_in, reject, requeue, forward };
    /// What a `forward` or `reject` is for, so the consumer counts it right.
    enum class purpose : std::uint8_t { none, redeliver, dead_letter };

    static disposition ack() { return disposition(kind::ack); }
    static disposition fail(handler_failure f) {
        disposition d(kind::fail);
        d.failure_ = std::move(f);
        return d;
    }
    static disposition retry_in(std::chrono::milliseconds delay, handler_failure f) {
        disposition d(kind::retry_in);
        d.delay_ = delay;
        d.failure_ = std::move(f);
        return d;
    }
    static disposition reject(handler_failure f, purpose p) {
        disposition d(kind::reject);
        d.failure_ = std::move(f);
        d.purpose_ = p;
        return d;
    }
    static disposition requeue(handler_failure f) {
        disposition d(kind::requeue);
        d.failure_ = std::move(f);
        return d;
    }
    /// `delay`: for a `redeliver` forward, how long the copy will wait in its retry queue.
    static disposition forward(message m, handler_failure f, purpose p,
                               std::chrono::milliseconds delay = {}) {
        disposition d(kind::forward);
        d.message_ = std::move(m);
        d.failure_ = std::move(f);
        d.purpose_ = p;
        d.delay_ = delay;
        return d;
    }

    kind what() const noexcept { return kind_; }
    purpose why() const noexcept { return purpose_; }
    bool failed() const noexcept { return kind_ == kind::fail; }
    /// The failure behind anything but `ack`.
    const handler_failure* failure() const noexcept { return failure_ ? &*failure_ : nullptr; }
    handler_failure* failure() noexcept { return failure_ ? &*failure_ : nullptr; }
    /// `retry_in`: the wait; a `forward` for `purpose::redeliver`: how long the copy waits in
    /// its retry queue (a consumer that keeps a group in strict order waits it in place).
    std::chrono::milliseconds delay() const noexcept { return delay_; }
    /// `forward` only: the message to publish before acknowledging.
    const message* forwarded() const noexcept { return message_ ? &*message_ : nullptr; }

private:
    explicit disposition(kind k)
        : kind_(k) {}

    kind kind_;
    purpose purpose_ = purpose::none;
    std::chrono::milliseconds delay_{0};
    std::optional<handler_failure> failure_{};
    std::optional<message> message_{};
};

} // namespace letterbox::middleware
