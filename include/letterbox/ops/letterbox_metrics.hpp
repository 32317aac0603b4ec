// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consumer_event.hpp>
#include <letterbox/event_sourcing/projection_batch.hpp>
#include <letterbox/event_sourcing/projection_stats.hpp>
#include <letterbox/message.hpp>
#include <letterbox/ops/consumer_counts.hpp>
#include <letterbox/ops/counter.hpp>
#include <letterbox/ops/histogram.hpp>
#include <letterbox/ops/metrics_registry.hpp>
#include <letterbox/outbox/relay_event.hpp>

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// letterbox's own metrics, in a `metrics_registry`: what the relays, consumers, stores and
/// dead-letter queues of an application do, under the names docs/operations.md lists
/// (`letterbox_published_total`, `letterbox_dead_lettered_total{reason=...}`, ...).
///
/// Wiring: events are pushed by observers (`relay_observer()` into
/// `relay_options::on_event`, `consumer_observer()` into `consumer_options::on_event`,
/// `duplicate_observer()` into `idempotent_handler::on_duplicate`); state is pulled when the
/// registry renders (`watch_outbox`, `watch_inbox`, `watch_dead_letter_queue`).
///
/// Lifetime: the registry must outlive this object, and this object every observer it handed
/// out and every component it watches must outlive the registry's last `render()` (or be
/// watched by a registry that dies first).
///
/// Thread safety: observers may be called from any thread; `watch_*` and `render()` too.
///
/// Example:
///
///     letterbox::ops::metrics_registry registry;
///     letterbox::ops::letterbox_metrics metrics(registry);
///     relay_options.on_event = metrics.relay_observer();
///     consumer_options.on_event = metrics.consumer_observer();
///     metrics.watch_outbox(outbox_store, clock);
///     metrics.watch_dead_letter_queue("orders.dlq", [&] { return gauge.value(); });
class letterbox_metrics {
public:
    /// Registers letterbox's families in `registry`.
    explicit letterbox_metrics(metrics_registry& registry);
    letterbox_metrics(const letterbox_metrics&) = delete;
    letterbox_metrics& operator=(const letterbox_metrics&) = delete;

    /// For `relay_options::on_event`: counts published, confirmed, returned and nacked
    /// publishes, and observes the commit-to-confirm latency of each confirmed row.
    std::function<void(const relay_event&)> relay_observer();

    /// For `consumer_options::on_event`: counts deliveries and how they were settled, dead
    /// letters by reason, and observes each handler run's duration.
    std::function<void(const consumer_event&)> consumer_observer();

    /// Like `consumer_observer()`, and also counts the events under `name` (the consumer id, or
    /// its queue), for `consumers()` and the dashboard's consumers panel
    /// (`http_server::watch_consumers`). Observers made with the same name share their counts.
    /// The metrics text is the same as with `consumer_observer()`: the families stay without
    /// a consumer label.
    std::function<void(const consumer_event&)> consumer_observer(std::string name);

    /// The counts of every consumer named in `consumer_observer(name)`, in the order the names
    /// were first given.
    std::vector<consumer_counts> consumers() const;

    /// The outbox gauges (pending, parked, oldest pending age), read from `store.stats(now)`
    /// when the registry renders, `now` from `clock.wall_now()`. A store error renders `NaN`.
    template <outbox_store Store, clock Clock>
    void watch_outbox(Store& store, Clock& clock);

    /// `letterbox_inbox_records`: `inbox.size(ec)` when the registry renders.
    template <class Inbox>
        requires requires(Inbox& i, std::error_code& ec) {
            { i.size(ec) } -> std::convertible_to<std::size_t>;
        }
    void watch_inbox(Inbox& inbox);

    /// `letterbox_consumer_timeouts_total`: `transport.consumer_timeouts()` when the registry
    /// renders. It counts the channels the broker closed because a delivery on them stayed
    /// unacknowledged past RabbitMQ's consumer timeout (`consumer_timeout`, 30 minutes by
    /// default): the broker redelivered what they held, the consumers consumed again, and the
    /// handling still running for a timed-out delivery can no longer acknowledge it. Both
    /// transports count it; any type with such a member will do.
    template <class Transport>
        requires requires(const Transport& t) {
            { t.consumer_timeouts() } -> std::convertible_to<std::uint64_t>;
        }
    void watch_transport(Transport& transport);

    /// `letterbox_dlq_depth{queue=...}`: the depth `read()` returns when the registry renders
    /// (typically a `dlq::depth_gauge`'s `value()`), or `NaN` when it returns none yet.
    void watch_dead_letter_queue(std::string queue,
                                 std::function<std::optional<std::uint32_t>()> read);

    /// The gauges of a projection, labelled `projection=name`, read from `runner.stats(ec)`
    /// (a `projection_runner`'s) when the registry renders: `letterbox_projection_position`
    /// (its checkpoint), `letterbox_projection_lag_events` (how far behind the event store's
    /// head) and `letterbox_projection_lag_seconds` (how long the oldest event not applied has
    /// waited). A store error renders `NaN`.
    template <class Runner>
        requires requires(Runner& r, std::error_code& ec) {
            { r.stats(ec) } -> std::same_as<projection_stats>;
        }
    void watch_projection(const std::string& name, Runner& runner);

    /// For `projection_options::on_batch`: counts the events each projection applied
    /// (`letterbox_projection_applied_total{projection=...}`) and observes each one's
    /// consistency lag, from its `recorded_at` to the commit that made it visible to queries
    /// (`letterbox_projection_consistency_lag_seconds{projection=...}`).
    std::function<void(const projection_batch&)> projection_observer();

    /// For `idempotent_handler::on_duplicate`: counts the duplicates the inbox absorbed.
    std::function<void(const message&)> duplicate_observer();

    metrics_registry& registry() noexcept { return *registry_; }

private:
    counter& dead_lettered(std::string_view reason);

    // One named consumer's counts: atomics, so its observer counts without a lock. Kept in a
    // deque, whose elements never move, so observers hold plain pointers to them.
    struct consumer_tally {
        explicit consumer_tally(std::string n)
            : name(std::move(n)) {}
        void count(consumer_event::kind k) noexcept;
        consumer_counts snapshot() const;

        const std::string name;
        std::atomic<std::uint64_t> delivered{0}, acked{0}, failed{0}, rejected{0}, retried{0},
            redelivered{0}, dead_lettered{0}, forward_failed{0};
    };
    consumer_tally& tally(std::string name);

    mutable std::mutex consumers_mutex_;
    std::deque<consumer_tally> consumers_;

    metrics_registry* registry_;
    counter *published_, *confirmed_, *returned_, *nacked_;
    counter *delivered_, *acked_, *failed_, *rejected_, *retried_, *redelivered_, *forward_failed_,
        *deduplicated_;
    histogram *handler_duration_, *confirm_latency_;
};

} // namespace letterbox::ops

#include <letterbox/ops/impl/letterbox_metrics.hpp>
