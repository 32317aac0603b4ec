// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/middleware/detail/handler_base.hpp>
#include <letterbox/middleware/detail/layer_base.hpp>
#include <letterbox/middleware/detail/wrappable.hpp>
#include <letterbox/middleware/stage.hpp>

#include <boost/uuid/uuid_io.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// The delivery handler that `retry(policy)` makes of `Inner`. Copies share their counts.
template <retry_policy Policy, detail::wrappable Inner>
class retry_handler : public detail::handler_base<retry_handler<Policy, Inner>, Inner> {
public:
    retry_handler(Policy policy, Inner inner)
        : detail::handler_base<retry_handler, Inner>(std::move(inner))
        , policy_(std::move(policy))
        , retried_(std::make_shared<std::atomic<std::uint64_t>>(0)) {}

    /// In-process retries so far (runs after the first), shared by copies.
    std::uint64_t retried() const noexcept { return retried_->load(std::memory_order_relaxed); }

private:
    friend detail::handler_base<retry_handler, Inner>;

    // After run `run` gave `r`: `r` as it is (success, or a failure not to retry), the failure
    // given up on with its reason, a delayed retry, or nothing to run again at once.
    std::optional<disposition> decide(const handling& x, std::uint32_t run, disposition& r) {
        if (!r.failed() || r.failure()->permanent)
            return std::move(r);
        handler_failure& f = *r.failure();
        const auto decision = policy_.decide({.attempt = run,
                                              .error = f.error,
                                              .exception = f.exception,
                                              .message_id = boost::uuids::to_string(x.d.msg.id)});
        if (decision.what == retry_decision::action::give_up || run >= policy_.max_attempts()) {
            f.permanent = decision.permanent;
            f.reason = std::string(decision.permanent ? death_reason::permanent_failure
                                                      : death_reason::retries_exhausted);
            return std::move(r);
        }
        retried_->fetch_add(1, std::memory_order_relaxed);
        if (decision.delay.count() > 0)
            return disposition::retry_in(decision.delay, std::move(f));
        x.rerun(f, run + 1);
        return std::nullopt;
    }

    Policy policy_;
    std::shared_ptr<std::atomic<std::uint64_t>> retried_;
};

/// The `retry` layer: `layer(inner)` or `layer.wrap(inner)` gives a `retry_handler`.
template <retry_policy Policy>
class retry_layer : public detail::layer_base<retry_layer<Policy>, middleware::stage::retry> {
public:
    explicit retry_layer(Policy p)
        : policy_(std::move(p)) {}

    const Policy& policy() const noexcept { return policy_; }
    /// The longest time one delivery can spend in this layer's delays.
    std::chrono::milliseconds horizon() const { return policy_.horizon(); }

private:
    friend detail::layer_base<retry_layer, middleware::stage::retry>;
    template <class Inner>
    using handler_type = retry_handler<Policy, Inner>;
    auto handler_arguments() const { return std::tie(policy_); }

    Policy policy_;
};

/// Immediate in-process retry, for short transient faults (a deadlock victim, a brief
/// connection blip): runs the inner handler again, at most `policy.max_attempts()` times per
/// delivery, while the policy says `retry`.
///
/// - A zero delay retries at once, inside the same call.
/// - A positive delay returns `disposition::retry_in`: the consumer waits on its clock,
///   **still holding the delivery and its prefetch slot**, then runs the pipeline again.
///   That is why in-process retry is for short delays only; longer ones belong to
///   `redelivery`, which holds nothing while it waits.
/// - A permanent failure (the policy's classifier) is never retried; the failure goes out
///   marked `permanent`, so the outer layers skip their retries too and dead-letter it.
/// - When the policy gives up, the failure goes out with its reason
///   (`death_reason::retries_exhausted` or `permanent_failure`); an outer `redelivery` may
///   still retry it later through the broker.
///
/// Attempts here count per delivery and are not written anywhere: a crash restarts them, and
/// the broker-level count (`redelivery`) is the one that survives.
template <retry_policy Policy>
retry_layer<Policy> retry(Policy policy) {
    return retry_layer<Policy>(std::move(policy));
}

} // namespace letterbox::middleware
