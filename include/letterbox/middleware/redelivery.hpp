// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/middleware/attempts_before.hpp>
#include <letterbox/middleware/detail/fault_headers.hpp>
#include <letterbox/middleware/detail/handler_base.hpp>
#include <letterbox/middleware/detail/layer_base.hpp>
#include <letterbox/middleware/detail/wrappable.hpp>
#include <letterbox/middleware/stage.hpp>
#include <letterbox/topology/retry_topology.hpp>

#include <boost/uuid/uuid_io.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// How `redelivery` hands a failed message back to the broker.
enum class redelivery_via : std::uint8_t {
    /// Publish a copy to the retry queue of the delay's level (with the attempt count in
    /// `headers::attempts`), then ack the original. Any number of delay levels.
    republish,
    /// `basic.reject` without requeue onto the work queue's dead-letter exchange, which must
    /// be the retry queue (`topology::rejects_go_to::retry_queue`); the broker counts the
    /// attempts in `x-death`. One delay level only (the first), and no letterbox header is
    /// written.
    reject,
};

/// The delivery handler that `redelivery(...)` makes of `Inner`.
template <retry_policy Policy, clock Clock, detail::wrappable Inner>
class redelivery_handler
    : public detail::handler_base<redelivery_handler<Policy, Clock, Inner>, Inner> {
public:
    redelivery_handler(Policy policy, topology::retry_topology topo, redelivery_via via,
                       Clock& clock, Inner inner)
        : detail::handler_base<redelivery_handler, Inner>(std::move(inner))
        , policy_(std::move(policy))
        , topology_(std::move(topo))
        , via_(via)
        , clock_(&clock) {}

private:
    friend detail::handler_base<redelivery_handler, Inner>;

    // After the inner handler gave `r`: what this layer makes of it (never a run again).
    std::optional<disposition> decide(const handling& x, std::uint32_t, disposition& r) {
        if (!r.failed() || r.failure()->permanent)
            return counted(std::move(r), x);
        handler_failure& f = *r.failure();
        const std::uint32_t attempt = attempts_before(x.d) + 1;
        f.attempts = attempt;
        const auto decision = policy_.decide({.attempt = attempt,
                                              .error = f.error,
                                              .exception = f.exception,
                                              .message_id = boost::uuids::to_string(x.d.msg.id)});
        if (decision.what == retry_decision::action::give_up || attempt >= policy_.max_attempts() ||
            topology_.delays.empty()) {
            f.permanent = f.permanent || decision.permanent;
            f.reason = std::string(f.permanent ? death_reason::permanent_failure
                                               : death_reason::retries_exhausted);
            return std::move(r);
        }
        f.reason.clear();
        if (via_ == redelivery_via::reject)
            return disposition::reject(std::move(f), disposition::purpose::redeliver);
        const auto level = topology_.level_for(decision.delay);
        message copy = detail::failed_copy(x.d, f, attempt, clock_->wall_now());
        copy.exchange.clear();
        copy.routing_key = topology_.retry_queue_name(level);
        // A jittered delay shorter than its level waits less (per-message TTL); the level's
        // TTL bounds it, so a message never waits longer than its level.
        if (decision.delay < level)
            copy.properties.expiration = std::to_string(decision.delay.count());
        return disposition::forward(std::move(copy), std::move(f), disposition::purpose::redeliver,
                                    std::min(decision.delay, level));
    }

    // A failure an inner layer marked permanent still gets its broker attempt count.
    static disposition counted(disposition r, const handling& x) {
        if (auto* f = r.failure(); f && r.failed() && f->attempts == 0)
            f->attempts = attempts_before(x.d) + 1;
        return r;
    }

    Policy policy_;
    topology::retry_topology topology_;
    redelivery_via via_;
    Clock* clock_;
};

/// The `redelivery` layer: `layer(inner)` gives a `redelivery_handler`.
template <retry_policy Policy, clock Clock>
class redelivery_layer
    : public detail::layer_base<redelivery_layer<Policy, Clock>, middleware::stage::redelivery> {
public:
    redelivery_layer(Policy p, topology::retry_topology topo, Clock& clock, redelivery_via via)
        : policy_(std::move(p))
        , topology_(std::move(topo))
        , clock_(&clock)
        , via_(via) {
        topology_.check();
    }

    const Policy& policy() const noexcept { return policy_; }
    const topology::retry_topology& topology() const noexcept { return topology_; }
    /// The longest time a message can spend waiting in retry queues: the policy's horizon.
    std::chrono::milliseconds horizon() const { return policy_.horizon(); }
    /// Broker deliveries a message can have.
    std::uint32_t max_attempts() const { return policy_.max_attempts(); }

private:
    friend detail::layer_base<redelivery_layer, middleware::stage::redelivery>;
    template <class Inner>
    using handler_type = redelivery_handler<Policy, Clock, Inner>;
    auto handler_arguments() const { return std::tie(policy_, topology_, via_, *clock_); }

    Policy policy_;
    topology::retry_topology topology_;
    Clock* clock_;
    redelivery_via via_;
};

/// Delayed retry through the broker. When the inner handler fails with a transient failure
/// and the policy allows another attempt, the message goes back to the broker to wait:
///
/// - `redelivery_via::republish` (default): a copy (same message id, body and properties)
///   is published to the retry queue of the delay's level, `<queue>.retry.<N>ms`, whose TTL
///   dead-letters it back to the work queue; the consumer acks the original **after** the
///   copy's confirm. The copy carries `headers::attempts` and the failure headers.
/// - `redelivery_via::reject`: `basic.reject` without requeue onto the work queue's DLX
///   (the retry queue); the broker's `x-death` counts the attempts.
///
/// Either way it holds no prefetch slot while waiting, and the wait survives a consumer
/// restart (the message sits in a durable queue). Attempts are counted from the message
/// (`attempts_before`), never from process memory. When the policy gives up (permanent
/// failure, or `policy.max_attempts()` broker deliveries), the failure goes out with its
/// reason for the dead-letter layer.
///
/// Declare the queues first (`topology::async_declare_all(t, topo.queues(), ...)`): a copy
/// published to a missing retry queue is returned, and the consumer then requeues the
/// original, so nothing is lost, but the message comes back at once.
///
/// On quorum queues (`retry_topology::quorum`) the count includes the returns the queue
/// counted in `x-delivery-count` (crashes, lost connections), and the work queue's delivery
/// limit bounds what never reaches this layer: a message that crashes the consumer every
/// time is dead-lettered by the broker (docs/retry-and-dead-letter.md, "Quorum queues").
/// Throws `letterbox::error` (`errc::invalid_argument`) for a topology that
/// `retry_topology::check` refuses.
template <retry_policy Policy, clock Clock>
redelivery_layer<Policy, Clock> redelivery(Policy policy, topology::retry_topology topo,
                                           Clock& clock,
                                           redelivery_via via = redelivery_via::republish) {
    return {std::move(policy), std::move(topo), clock, via};
}

} // namespace letterbox::middleware
