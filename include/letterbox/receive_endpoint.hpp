// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/none.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/consumer_event.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/detail/apply_topology_check.hpp>
#include <letterbox/lint/topology_check_options.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/topology/quorum_options.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/async_declare_all.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// What a `receive_endpoint` is: its queue and who consumes it. Everything else is derived.
struct receive_endpoint_options {
    /// The work queue. Its retry queues (`<queue>.retry.<N>ms`, one per delay of the
    /// redelivery policy) and its dead-letter queue (`<queue>.dlq`) are named after it.
    std::string queue{};
    /// The inbox records under it (idempotency is per consumer id) and dead-lettered copies
    /// carry it (`headers::consumer_id`). Empty: the queue's name.
    std::string consumer_id{};
    /// At most this many unacknowledged deliveries (`consume_options::prefetch`).
    std::uint16_t prefetch = 32;
    /// Observes what the consumer does with each delivery (`consumer_options::on_event`).
    std::function<void(const consumer_event&)> on_event{};
    /// Where the handler runs: empty for the transport's executor, or a thread pool's for
    /// handlers that block (`consumer_options::handler_executor`).
    boost::asio::any_io_executor handler_executor{};
    /// Quorum queues for the work, retry and dead-letter queues (`retry_topology::quorum`);
    /// `std::nullopt` (the default): classic queues.
    std::optional<topology::quorum_options> quorum{};
    /// The topology check `consume` runs (`lint::topology_check_options`): off unless its `check`
    /// is set, e.g. to `lint::check_topology`.
    lint::topology_check_options topology_check{};
};

namespace detail {
/// The real clock of endpoints that were given none. `steady_clock` has no state, so this
/// object holds nothing that could change.
inline steady_clock& endpoint_steady_clock() noexcept {
    static steady_clock clock;
    return clock;
}
} // namespace detail

/// One queue and its whole consuming pipeline, stated once: the queue, the consumer id, the
/// clock, the immediate retry policy and the redelivery policy. From them it derives the
/// topology (the retry queues from the policy's delays, the dead-letter queue), the layers in
/// letterbox's order (dead-letter > redelivery > retry > the inbox's unit of work > your
/// handler), the inbox's consumer id and the consumer. It is what a MassTransit receive
/// endpoint or a Watermill router handler is:
///
///     auto orders = letterbox::receive_endpoint(transport, {.queue = "orders"})
///                       .retry(letterbox::backoff::immediate(2))
///                       .redelivery(letterbox::backoff::exponential(1s, 10.0, 10s, 3));
///     auto worker = orders.consume(inbox, letterbox::typed<order>(ship));
///     co_await orders.async_declare(asio::use_awaitable);
///     co_await worker.async_start(asio::use_awaitable);
///
/// `retry` and `redelivery` return a new endpoint; a policy left out is a layer left out. The
/// dead-letter layer is always there (explicit publish to `<queue>.dlq`, with the reason).
/// With an inbox store that has a retention (`inbox_retention`), `consume` refuses a pipeline
/// whose redelivery horizon is longer (`errc::dedup_window_too_short`). For another layout
/// (native dead-lettering, reject-based redelivery, another layer order), build the pipeline
/// with `middleware::compose` and a `consumer` yourself: this is a shorthand for that, not a
/// different mechanism.
///
/// With `receive_endpoint_options::quorum`, every queue is a quorum queue; a topology that
/// `retry_topology::check` refuses throws `letterbox::error` (`errc::invalid_argument`) here.
///
/// The transport and the clock must outlive the endpoint and its consumers.
template <class Transport, class Clock = steady_clock, class Retry = backoff::none,
          class Redelivery = backoff::none>
class receive_endpoint {
public:
    /// An endpoint on the system's steady clock.
    receive_endpoint(Transport& transport,
                     receive_endpoint_options options) requires std::same_as<Clock, steady_clock>
        : receive_endpoint(transport, detail::endpoint_steady_clock(), std::move(options)) {}

    receive_endpoint(Transport& transport, Clock& clock, receive_endpoint_options options)
        : transport_(&transport)
        , clock_(&clock)
        , options_(std::move(options)) {
        if (options_.consumer_id.empty())
            options_.consumer_id = options_.queue;
        topology().check(); // a quorum topology RabbitMQ would refuse fails here, not later
    }

    /// The same endpoint with immediate, in-process retry by `policy` (`middleware::retry`).
    template <retry_policy P>
    receive_endpoint<Transport, Clock, P, Redelivery> retry(P policy) const {
        return {*this, std::move(policy), redelivery_};
    }

    /// The same endpoint with delayed redelivery through the broker by `policy`
    /// (`middleware::redelivery`): one retry queue per distinct delay of its schedule.
    template <retry_policy P>
    receive_endpoint<Transport, Clock, Retry, P> redelivery(P policy) const {
        return {*this, retry_, std::move(policy)};
    }

    const receive_endpoint_options& options() const noexcept { return options_; }

    /// The queues: the work queue, a retry queue per delay level of the redelivery policy, the
    /// dead-letter queue.
    topology::retry_topology topology() const {
        return {.queue = options_.queue,
                .delays = topology::retry_topology::levels_of(redelivery_),
                .quorum = options_.quorum};
    }

    /// Declares `topology().queues()`; completes with `void(error_code)` (see
    /// `topology::async_declare_all`, and its cancellation).
    template <class Token>
    auto async_declare(Token&& token) const {
        return topology::async_declare_all(*transport_, topology().queues(),
                                           std::forward<Token>(token));
    }

    /// A consumer of the queue that runs `handler` (a `handler`: no inbox) inside the layers.
    template <class Handler>
    auto consume(Handler handler) const {
        std::optional<std::chrono::milliseconds> retention;
        if constexpr (requires { handler.retention(); })
            retention = handler.retention();
        auto pipeline = std::apply(
            [&](auto... layers) { return middleware::compose(std::move(handler), layers...); },
            layers());
        check_topology(retention); // after compose's own dedup-window check
        return consumer<Transport, decltype(pipeline), Clock>(
            *transport_, std::move(pipeline), *clock_,
            {.consume = {.queue = options_.queue, .prefetch = options_.prefetch},
             .on_event = options_.on_event,
             .handler_executor = options_.handler_executor});
    }

    /// A consumer of the queue whose `effect` runs in a unit of work of `inbox`, recorded
    /// under the consumer id (`middleware::idempotent`), inside the layers. `inbox` begins its
    /// own units (`sqlite::inbox_store`, `in_memory_inbox_store`) and must outlive the consumer.
    template <class Inbox, class Effect>
    auto consume(Inbox& inbox, Effect effect) const {
        return consume(
            middleware::idempotent(std::move(effect), inbox, options_.consumer_id, *clock_));
    }

private:
    template <class, class, class, class>
    friend class receive_endpoint;

    template <class R0, class D0>
    receive_endpoint(const receive_endpoint<Transport, Clock, R0, D0>& from, Retry retry,
                     Redelivery redelivery)
        : transport_(from.transport_)
        , clock_(from.clock_)
        , options_(from.options_)
        , retry_(std::move(retry))
        , redelivery_(std::move(redelivery)) {}

    // The topology check of `options_.topology_check`, if it has one: the endpoint's queues and
    // what its consumer does (dead-letters itself, after the retry queues, with `retention`).
    void check_topology(std::optional<std::chrono::milliseconds> retention) const {
        const auto& tc = options_.topology_check;
        if (!tc.check)
            return;
        const auto topo = topology();
        lint::broker_topology t;
        t.queues = topo.queues();
        t.policies = tc.policies;
        lint::consumer_settings c;
        c.queue = options_.queue;
        c.failures = lint::failure_handling::publish_to_dead_letter_queue;
        for (const auto d : topo.delays)
            c.retry_queues.push_back(topo.retry_queue_name(d));
        c.inbox_retention = retention;
        c.redelivery_horizon = std::apply(
            [](const auto&... l) { return middleware::redelivery_horizon(l...); }, layers());
        std::vector<in_memory::broker_profile> profiles;
        if (tc.profile)
            profiles.push_back(*tc.profile);
        else if (auto p = lint::detail::transport_profile(*transport_))
            profiles.push_back(*p);
        else {
            const auto all = in_memory::broker_profile::known();
            profiles.assign(all.begin(), all.end());
        }
        lint::detail::apply_topology_check(tc, t, c, profiles,
                                           "receive_endpoint '" + options_.queue + "'");
    }

    // The layers the policies ask for, as a tuple for `compose`.
    auto layers() const {
        auto dead =
            std::tuple(middleware::dead_letter({.consumer_id = options_.consumer_id}, *clock_));
        auto broker = [&] {
            if constexpr (std::same_as<Redelivery, backoff::none>)
                return std::tuple<>();
            else
                return std::tuple(middleware::redelivery(redelivery_, topology(), *clock_));
        };
        auto in_process = [&] {
            if constexpr (std::same_as<Retry, backoff::none>)
                return std::tuple<>();
            else
                return std::tuple(middleware::retry(retry_));
        };
        return std::tuple_cat(std::move(dead), broker(), in_process());
    }

    Transport* transport_;
    Clock* clock_;
    receive_endpoint_options options_;
    Retry retry_{};
    Redelivery redelivery_{};
};

template <class Transport>
receive_endpoint(Transport&, receive_endpoint_options) -> receive_endpoint<Transport>;
template <class Transport, class Clock>
receive_endpoint(Transport&, Clock&, receive_endpoint_options)
    -> receive_endpoint<Transport, Clock>;

} // namespace letterbox
