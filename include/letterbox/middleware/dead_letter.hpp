// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/classifier.hpp>
#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/error.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/middleware/attempts_before.hpp>
#include <letterbox/middleware/detail/fault_headers.hpp>
#include <letterbox/middleware/detail/handler_base.hpp>
#include <letterbox/middleware/detail/layer_base.hpp>
#include <letterbox/middleware/detail/wrappable.hpp>
#include <letterbox/middleware/stage.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// How `dead_letter` moves a message it gives up on.
enum class dead_letter_strategy : std::uint8_t {
    /// Publish a copy with the fault headers to `exchange` / `routing_key`, then ack the
    /// original after the copy's confirm. The reason, exception and history travel with it.
    explicit_publish,
    /// `basic.reject` without requeue onto the work queue's dead-letter exchange
    /// (`topology::rejects_go_to::dead_letter_queue`). The broker records only "rejected" in
    /// `x-death`; the reason and exception are lost.
    native,
};

/// Where and how `dead_letter` dead-letters.
struct dead_letter_options {
    dead_letter_strategy strategy = dead_letter_strategy::explicit_publish;
    /// `explicit_publish`: the exchange to publish to; "" is the default exchange.
    std::string exchange{};
    /// `explicit_publish`: the routing key; empty means `<queue it came from>.dlq` on the
    /// default exchange (`topology::retry_topology`'s dead-letter queue).
    std::string routing_key{};
    /// Written to `headers::consumer_id`, so an operator knows which consumer failed.
    std::string consumer_id{};
    /// Names the reason of a failure that no inner policy classified (no retry layer):
    /// `permanent-failure` when this says permanent, else `handler-failed`.
    backoff::classifier classify{};
};

/// The delivery handler that `dead_letter(...)` makes of `Inner`.
template <clock Clock, detail::wrappable Inner>
class dead_letter_handler : public detail::handler_base<dead_letter_handler<Clock, Inner>, Inner> {
public:
    dead_letter_handler(dead_letter_options o, Clock& clock, Inner inner)
        : detail::handler_base<dead_letter_handler, Inner>(std::move(inner))
        , options_(std::move(o))
        , clock_(&clock) {}

private:
    friend detail::handler_base<dead_letter_handler, Inner>;

    // After the inner handler gave `r`: what this layer makes of it (never a run again).
    std::optional<disposition> decide(const handling& x, std::uint32_t, disposition& r) {
        // The consumer's own database failing is not the message's fault: never dead-letter
        // it for that (the consumer requeues it).
        if (!r.failed() || is_store_error(r.failure()->error))
            return std::move(r);
        handler_failure f = std::move(*r.failure());
        if (f.reason.empty()) {
            f.permanent =
                f.permanent || options_.classify.is_permanent(
                                   {.attempt = 1, .error = f.error, .exception = f.exception});
            f.reason = std::string(f.permanent ? death_reason::permanent_failure
                                               : death_reason::handler_failed);
        }
        f.attempts = std::max(f.attempts, attempts_before(x.d) + 1);
        if (options_.strategy == dead_letter_strategy::native)
            return disposition::reject(std::move(f), disposition::purpose::dead_letter);
        const auto now = clock_->wall_now();
        message copy = detail::failed_copy(x.d, f, f.attempts, now);
        copy.headers.set(headers::death_reason, f.reason);
        copy.headers.set(headers::dead_lettered_time, letterbox::detail::format_rfc3339(now));
        if (!options_.consumer_id.empty())
            copy.headers.set(headers::consumer_id, options_.consumer_id);
        copy.exchange = options_.exchange;
        copy.routing_key = options_.routing_key.empty() ? x.d.queue + ".dlq" : options_.routing_key;
        return disposition::forward(std::move(copy), std::move(f),
                                    disposition::purpose::dead_letter);
    }

    dead_letter_options options_;
    Clock* clock_;
};

/// The `dead_letter` layer: `layer(inner)` gives a `dead_letter_handler`.
template <clock Clock>
class dead_letter_layer
    : public detail::layer_base<dead_letter_layer<Clock>, middleware::stage::dead_letter> {
public:
    dead_letter_layer(dead_letter_options o, Clock& clock)
        : options_(std::move(o))
        , clock_(&clock) {}

    const dead_letter_options& options() const noexcept { return options_; }

private:
    friend detail::layer_base<dead_letter_layer, middleware::stage::dead_letter>;
    template <class Inner>
    using handler_type = dead_letter_handler<Clock, Inner>;
    auto handler_arguments() const { return std::tie(options_, *clock_); }

    dead_letter_options options_;
    Clock* clock_;
};

/// The dead-letter fallback, the outermost layer: whatever failure reaches it leaves the
/// work queue for good, with its reason, so that a poison message never blocks the queue and
/// never vanishes.
///
/// - `explicit_publish` (default): publishes a copy to the dead-letter exchange or queue
///   with the fault headers: `death_reason` (`permanent-failure`, `retries-exhausted` or
///   `handler-failed`), `exception_type`, `exception_message`, `attempts`,
///   `first_failure_time`, `last_failure_time`, `dead_lettered_time`, `original_exchange`,
///   `original_routing_key`, `original_queue` and `consumer_id`; the consumer acks the
///   original only after the copy's confirm, and requeues it if the publish fails.
/// - `native`: rejects without requeue; the queue's DLX must lead to the dead-letter queue.
///
/// Failures of the consumer's own store (`is_store_error`) pass through untouched: the
/// consumer requeues those deliveries rather than dead-letter a good message.
template <clock Clock>
dead_letter_layer<Clock> dead_letter(dead_letter_options options, Clock& clock) {
    return {std::move(options), clock};
}

} // namespace letterbox::middleware
