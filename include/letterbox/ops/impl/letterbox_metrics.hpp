// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/ops/letterbox_metrics.hpp>

#include <letterbox/handler_failure.hpp>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

namespace detail {

inline double seconds(std::chrono::nanoseconds d) {
    return std::chrono::duration<double>(d).count();
}

} // namespace detail

inline letterbox_metrics::letterbox_metrics(metrics_registry& r)
    : registry_(&r)
    , published_(&r.make_counter("letterbox_published_total",
                                 "Outbox messages handed to the transport by the relay "
                                 "(first attempts and republishes)"))
    , confirmed_(&r.make_counter("letterbox_confirmed_total",
                                 "Outbox messages the broker confirmed as stored and routed"))
    , returned_(&r.make_counter("letterbox_returned_total",
                                "Outbox messages the broker returned as unroutable"))
    , nacked_(&r.make_counter("letterbox_nacked_total",
                              "Outbox messages the broker refused (basic.nack)"))
    , delivered_(&r.make_counter("letterbox_delivered_total", "Deliveries consumers received"))
    , acked_(&r.make_counter("letterbox_acked_total", "Deliveries handled and acknowledged"))
    , failed_(&r.make_counter("letterbox_failed_total",
                              "Handler failures no middleware layer decided on"))
    , rejected_(&r.make_counter("letterbox_rejected_total",
                                "Deliveries rejected without requeue (the broker dead-letters "
                                "them)"))
    , retried_(
          &r.make_counter("letterbox_retried_total",
                          "Handler runs repeated by an in-process retry, at once or after a delay"))
    , redelivered_(&r.make_counter("letterbox_redelivered_total",
                                   "Deliveries handed back to the broker for a delayed retry"))
    , forward_failed_(&r.make_counter("letterbox_forward_failed_total",
                                      "Retry or dead-letter copies whose publish failed (the "
                                      "original was requeued)"))
    , deduplicated_(&r.make_counter("letterbox_deduplicated_total",
                                    "Duplicate deliveries the inbox absorbed (no second effect)"))
    , handler_duration_(&r.make_histogram("letterbox_handler_duration_seconds",
                                          "How long each handler run took",
                                          histogram::default_buckets()))
    , confirm_latency_(&r.make_histogram(
          "letterbox_relay_confirm_latency_seconds",
          "From the business commit (outbox row created) to the broker's confirm",
          {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0})) {
    // The known reasons exist (at 0) before the first dead letter, so that rates and alerts
    // over them work from the start.
    for (auto reason :
         {middleware::death_reason::permanent_failure, middleware::death_reason::retries_exhausted,
          middleware::death_reason::handler_failed,
          middleware::death_reason::missing_idempotency_key,
          middleware::death_reason::missing_group_key, middleware::death_reason::missing_reply_to})
        dead_lettered(reason);
}

inline counter& letterbox_metrics::dead_lettered(std::string_view reason) {
    return registry_->make_counter("letterbox_dead_lettered_total",
                                   "Messages dead-lettered, by reason",
                                   {{"reason", reason.empty() ? "unknown" : std::string(reason)}});
}

inline std::function<void(const relay_event&)> letterbox_metrics::relay_observer() {
    return [this](const relay_event& e) {
        switch (e.what) {
        case relay_event::kind::published:
            return published_->add();
        case relay_event::kind::confirmed:
            confirmed_->add();
            return confirm_latency_->observe(detail::seconds(
                std::chrono::duration_cast<std::chrono::nanoseconds>(e.at - e.record.created_at)));
        case relay_event::kind::returned:
            return returned_->add();
        case relay_event::kind::nacked:
            return nacked_->add();
        }
    };
}

inline std::function<void(const consumer_event&)> letterbox_metrics::consumer_observer() {
    return [this](const consumer_event& e) {
        switch (e.what) {
        case consumer_event::kind::delivered:
            return delivered_->add();
        case consumer_event::kind::handled:
            return handler_duration_->observe(detail::seconds(e.handler_duration));
        case consumer_event::kind::acked:
            return acked_->add();
        case consumer_event::kind::failed:
            return failed_->add();
        case consumer_event::kind::rejected:
            return rejected_->add();
        case consumer_event::kind::retried:
            return retried_->add();
        case consumer_event::kind::redelivered:
            return redelivered_->add();
        case consumer_event::kind::dead_lettered:
            return dead_lettered(e.reason).add();
        case consumer_event::kind::forward_failed:
            return forward_failed_->add();
        }
    };
}

inline void letterbox_metrics::consumer_tally::count(consumer_event::kind k) noexcept {
    const auto add = [](std::atomic<std::uint64_t>& n) {
        n.fetch_add(1, std::memory_order_relaxed);
    };
    switch (k) {
    case consumer_event::kind::delivered:
        return add(delivered);
    case consumer_event::kind::handled:
        return;
    case consumer_event::kind::acked:
        return add(acked);
    case consumer_event::kind::failed:
        return add(failed);
    case consumer_event::kind::rejected:
        return add(rejected);
    case consumer_event::kind::retried:
        return add(retried);
    case consumer_event::kind::redelivered:
        return add(redelivered);
    case consumer_event::kind::dead_lettered:
        return add(dead_lettered);
    case consumer_event::kind::forward_failed:
        return add(forward_failed);
    }
}

inline consumer_counts letterbox_metrics::consumer_tally::snapshot() const {
    const auto get = [](const std::atomic<std::uint64_t>& n) {
        return n.load(std::memory_order_relaxed);
    };
    return consumer_counts{.consumer = name,
                           .delivered = get(delivered),
                           .acked = get(acked),
                           .failed = get(failed),
                           .rejected = get(rejected),
                           .retried = get(retried),
                           .redelivered = get(redelivered),
                           .dead_lettered = get(dead_lettered),
                           .forward_failed = get(forward_failed)};
}

inline letterbox_metrics::consumer_tally& letterbox_metrics::tally(std::string name) {
    std::lock_guard lock(consumers_mutex_);
    for (auto& t : consumers_)
        if (t.name == name)
            return t;
    return consumers_.emplace_back(std::move(name));
}

inline std::function<void(const consumer_event&)>
letterbox_metrics::consumer_observer(std::string name) {
    auto* t = &tally(std::move(name));
    return [all = consumer_observer(), t](const consumer_event& e) {
        all(e);
        t->count(e.what);
    };
}

inline std::vector<consumer_counts> letterbox_metrics::consumers() const {
    std::lock_guard lock(consumers_mutex_);
    std::vector<consumer_counts> out;
    out.reserve(consumers_.size());
    for (const auto& t : consumers_)
        out.push_back(t.snapshot());
    return out;
}

template <outbox_store Store, clock Clock>
void letterbox_metrics::watch_outbox(Store& store, Clock& clock) {
    auto read = [&store, &clock](auto field) {
        return [&store, &clock, field] {
            std::error_code ec;
            const auto stats = store.stats(clock.wall_now(), ec);
            return ec ? std::nan("") : field(stats);
        };
    };
    registry_->add_gauge_function(
        "letterbox_outbox_pending", "Outbox rows waiting to be published", {},
        read([](const outbox_stats& s) { return static_cast<double>(s.pending); }));
    registry_->add_gauge_function(
        "letterbox_outbox_parked", "Outbox rows parked after too many failures", {},
        read([](const outbox_stats& s) { return static_cast<double>(s.parked); }));
    registry_->add_gauge_function(
        "letterbox_outbox_oldest_pending_age_seconds",
        "Age of the oldest pending outbox row (the relay's lag)", {},
        read([](const outbox_stats& s) {
            return std::chrono::duration<double>(s.oldest_pending_age).count();
        }));
}

template <class Inbox>
    requires requires(Inbox& i, std::error_code& ec) {
        { i.size(ec) } -> std::convertible_to<std::size_t>;
    }
void letterbox_metrics::watch_inbox(Inbox& inbox) {
    registry_->add_gauge_function("letterbox_inbox_records", "Inbox records kept for deduplication",
                                  {}, [&inbox] {
                                      std::error_code ec;
                                      const auto n = inbox.size(ec);
                                      return ec ? std::nan("") : static_cast<double>(n);
                                  });
}

template <class Transport>
    requires requires(const Transport& t) {
        { t.consumer_timeouts() } -> std::convertible_to<std::uint64_t>;
    }
void letterbox_metrics::watch_transport(Transport& transport) {
    registry_->add_counter_function(
        "letterbox_consumer_timeouts_total",
        "Channels the broker closed for a delivery left unacknowledged past its consumer timeout",
        {}, [&transport] { return static_cast<double>(transport.consumer_timeouts()); });
}

inline void
letterbox_metrics::watch_dead_letter_queue(std::string queue,
                                           std::function<std::optional<std::uint32_t>()> read) {
    registry_->add_gauge_function("letterbox_dlq_depth", "Messages in a dead-letter queue",
                                  {{"queue", std::move(queue)}}, [read = std::move(read)] {
                                      const auto v = read();
                                      return v ? static_cast<double>(*v) : std::nan("");
                                  });
}

template <class Runner>
    requires requires(Runner& r, std::error_code& ec) {
        { r.stats(ec) } -> std::same_as<projection_stats>;
    }
void letterbox_metrics::watch_projection(const std::string& name, Runner& runner) {
    auto read = [&runner](auto field) {
        return [&runner, field] {
            std::error_code ec;
            const auto stats = runner.stats(ec);
            return ec ? std::nan("") : field(stats);
        };
    };
    const metric_labels labels{{"projection", name}};
    registry_->add_gauge_function(
        "letterbox_projection_position", "The last event position a projection applied", labels,
        read([](const projection_stats& s) { return static_cast<double>(s.position); }));
    registry_->add_gauge_function(
        "letterbox_projection_lag_events", "Events appended that a projection has not applied yet",
        labels, read([](const projection_stats& s) { return static_cast<double>(s.lag_events); }));
    registry_->add_gauge_function(
        "letterbox_projection_lag_seconds",
        "How long the oldest event a projection has not applied has waited", labels,
        read([](const projection_stats& s) {
            return std::chrono::duration<double>(s.lag_time).count();
        }));
}

inline std::function<void(const projection_batch&)> letterbox_metrics::projection_observer() {
    return [this](const projection_batch& b) {
        const metric_labels labels{{"projection", std::string(b.projection)}};
        registry_
            ->make_counter("letterbox_projection_applied_total",
                           "Events a projection applied to its read model", labels)
            .add(static_cast<double>(b.events.size()));
        auto& lag = registry_->make_histogram(
            "letterbox_projection_consistency_lag_seconds",
            "From an event's append to the projection commit that made it visible to queries",
            {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0}, labels);
        for (const auto& e : b.events)
            lag.observe(detail::seconds(
                std::max(store_time::duration::zero(), b.committed_at - e.recorded_at)));
    };
}

inline std::function<void(const message&)> letterbox_metrics::duplicate_observer() {
    return [this](const message&) {
        deduplicated_->add();
    };
}

} // namespace letterbox::ops
