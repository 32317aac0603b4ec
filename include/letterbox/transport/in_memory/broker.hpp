// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/detail/unique_function.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/message.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/transport/in_memory/broker_counters.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>
#include <letterbox/transport/in_memory/connection.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>
#include <letterbox/transport/in_memory/detail/clock_adapter.hpp>
#include <letterbox/transport/in_memory/queue_info.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_type.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// Options of the in-memory broker.
struct broker_options {
    /// Which RabbitMQ version to reproduce.
    broker_profile profile = broker_profile::rabbitmq_3_10();
    /// `max_message_size` in bytes; `std::nullopt` takes the profile's default.
    std::optional<std::size_t> max_message_size{};
    /// The seed of the ids `generate_message_id` hands out (to `in_memory::transport`'s
    /// publishes of messages with the nil id). The same seed gives the same ids, so a
    /// simulation replays; brokers made with the default seed all give the same sequence.
    std::uint64_t message_id_seed = 0x6c65'7474'6572'626fULL;
};

/// An in-memory model of a RabbitMQ 0-9-1 broker: exchanges, bindings, queues with their
/// arguments, consumers with prefetch, acknowledgements, dead-lettering with `x-death`,
/// TTL, length limits, quorum delivery limits, publisher confirms and returns, durability
/// across a simulated restart, and counters for every way a message can leave a queue.
///
/// It is a deterministic state machine: given the same operations, and on a single-threaded
/// `io_context` with a `virtual_clock`, it produces the same deliveries in the same order.
/// Time (TTL expiry) is read from the clock; expiry timers run on the executor. Clients
/// open a `connection`, then `channel`s. docs/in-memory-transport.md lists every modelled
/// behaviour and every known difference from RabbitMQ.
///
/// Fault hooks, for tests and simulations: `sever_all`, `nack_nth_publish`,
/// `lose_nth_confirm`, `restart`, and an outage: `go_down` ... `come_back`.
///
/// Thread safety: none. Use the broker, its connections and channels from the executor's
/// thread only (a single-threaded `io_context` or a strand). The clock must outlive the
/// broker.
class broker {
public:
    /// A broker on `ex` using the real clock.
    explicit broker(boost::asio::any_io_executor ex, broker_options opts = {})
        : broker(ex, default_clock(), std::move(opts)) {}

    /// A broker on `ex` reading time from `clock` (e.g. a `virtual_clock`).
    template <letterbox::clock Clock>
    broker(boost::asio::any_io_executor ex, Clock& clock, broker_options opts = {})
        : ex_(ex)
        , state_(std::make_shared<detail::broker_state>(
              std::make_unique<detail::clock_model<Clock>>(clock, ex), opts.profile,
              opts.max_message_size.value_or(opts.profile.max_message_size),
              opts.message_id_seed)) {}

    broker(const broker&) = delete;
    broker& operator=(const broker&) = delete;
    broker(broker&&) noexcept = default;
    broker& operator=(broker&&) noexcept = default;

    boost::asio::any_io_executor get_executor() const noexcept { return ex_; }
    const broker_profile& profile() const noexcept { return state_->profile(); }

    /// Opens a client connection; `name` is for diagnostics. While the broker is down
    /// (`go_down`), the attempt is refused: the connection returned is already closed, its
    /// `close_reason()` says why (`errc::connection_closed`), and every channel opened on it is
    /// closed too.
    connection connect(std::string name = {}) {
        return connection(state_, state_->open_connection(std::move(name)));
    }

    // -- observation -------------------------------------------------------------------------
    const broker_counters& counters() const noexcept { return state_->counters(); }
    std::optional<queue_info> queue(std::string_view name) const { return state_->info(name); }
    std::vector<std::string> queue_names() const { return state_->queue_names(); }
    bool has_exchange(std::string_view name) const { return state_->has_exchange(name); }
    /// The bindings whose source is `exchange`.
    std::vector<topology::binding> bindings(std::string_view exchange) const {
        return state_->bindings_of(exchange);
    }
    /// Ready messages over every queue.
    std::size_t total_ready() const { return state_->totals().first; }
    /// Unacknowledged deliveries over every queue.
    std::size_t total_unacked() const { return state_->totals().second; }
    std::size_t connection_count() const noexcept { return state_->open_connections(); }
    /// Open channels over every open connection.
    std::size_t channel_count() const noexcept { return state_->open_channels(); }
    /// Whether the broker is down (between `go_down` and `come_back`).
    bool is_down() const noexcept { return state_->is_down(); }
    /// Connection attempts refused because the broker was down, since it was created.
    std::uint64_t refused_connections() const noexcept { return state_->refused_connections(); }

    /// The next id of the broker's own id sequence, seeded with
    /// `broker_options::message_id_seed`: what `in_memory::transport::async_publish` gives a
    /// message whose id is nil, as `amqp::transport` does with random ids. One sequence per
    /// broker, so the transports of one broker never hand out the same id twice, and the same
    /// operations give the same ids. The channel API never calls it: a raw publish plays a
    /// publisher outside letterbox, whose message keeps whatever message-id it had.
    message_id generate_message_id() { return state_->next_message_id(); }

    // -- faults ------------------------------------------------------------------------------
    /// Closes every client connection with CONNECTION_FORCED (a network failure): their
    /// unacknowledged deliveries are requeued, and publishes awaiting a confirm have an
    /// unknown outcome.
    void sever_all() { state_->sever_all(); }
    /// The n-th publish from now (n >= 1; 0 disarms) is refused: nacked, not stored.
    void nack_nth_publish(std::uint64_t n) { state_->nack_nth_publish(n); }
    /// The n-th publish from now (n >= 1; 0 disarms) is stored, but its confirm is lost and
    /// its connection drops, so the publisher sees an unknown outcome.
    void lose_nth_confirm(std::uint64_t n) { state_->lose_nth_confirm(n); }
    /// Restarts the broker: every connection drops; what survives is exactly what a real one
    /// keeps: durable exchanges and queues, their bindings, and the persistent messages of
    /// durable classic queues (every message of a quorum queue). Unacknowledged messages come
    /// back marked redelivered. Counters are kept.
    void restart() { state_->restart(); }

    /// Starts an outage (the network or the broker's host is unreachable; the broker itself
    /// keeps running): every connection closes with CONNECTION_FORCED, as with `sever_all`, and
    /// every connection attempt fails (`connect` returns a closed connection, counted by
    /// `refused_connections()`) until `come_back`. Unlike `restart`, everything is kept:
    /// exchanges, queues, bindings, messages (unacknowledged ones are requeued) and TTL timers.
    /// Publishes awaiting a confirm have an unknown outcome. Calling it again while down does
    /// nothing more; `restart` while down drops what a restart drops and stays down.
    void go_down() { state_->go_down(); }

    /// Ends the outage: connections are accepted again. The waits started with `async_wait_up`
    /// complete (posted to their executors), which is how `in_memory::transport` reconnects and
    /// restores its consumers without waiting for its next operation. Does nothing when up.
    void come_back() {
        for (auto& waiter : state_->come_back())
            waiter();
    }

    /// Completes with `void(error_code)` once the broker is up: at once (posted) when it
    /// is, otherwise when `come_back` is called. The completion runs on the token's associated
    /// executor, by default the broker's. A wait pending when the broker is destroyed never
    /// completes (its handler is destroyed). A RabbitMQ client instead retries its connection
    /// every recovery interval; waiting for the broker's signal is the model's simplification,
    /// so that an outage costs no polling and no virtual time.
    ///
    /// Cancellation (the token's cancellation slot): `terminal`, `partial` and `total`; the wait
    /// completes at once with `std::errc::operation_canceled`.
    template <class Token>
    auto async_wait_up(Token&& token) {
        // Untracked: the program ends the outage, not the executor.
        return letterbox::detail::async_start<void(error_code),
                                              letterbox::detail::outstanding_work::untracked>(
            std::forward<Token>(token), ex_,
            [s = state_](letterbox::detail::async_op<void(error_code)> op) {
                if (!s->is_down())
                    return op(std::error_code{});
                op.on_cancel([](auto cancelled) { cancelled.cancelled(); },
                             boost::asio::cancellation_type::all);
                s->when_up([op] { op(std::error_code{}); });
            });
    }

private:
    // The steady clock is stateless, so one constant instance serves every broker.
    static const steady_clock& default_clock() {
        static const steady_clock c;
        return c;
    }

    boost::asio::any_io_executor ex_;
    std::shared_ptr<detail::broker_state> state_{};
};

} // namespace letterbox::in_memory
