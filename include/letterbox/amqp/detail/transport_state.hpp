// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/broker_info.hpp>
#include <letterbox/amqp/codec/message_mapping.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/amqp/detail/channel_core.hpp>
#include <letterbox/amqp/detail/connection_core.hpp>
#include <letterbox/amqp/detail/endpoint_order.hpp>
#include <letterbox/amqp/endpoint.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/consumer_timeout.hpp>
#include <letterbox/detail/disconnect_watchers.hpp>
#include <letterbox/detail/settlement.hpp>
#include <letterbox/detail/unique_function.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/direct_reply_to.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

/// The state of an `amqp::transport`, on one strand: the current connection and its
/// channels (one confirm-mode publishing channel, one for topology, one per consumer, one per
/// queue read with basic.get), the publishes awaiting confirms, the consumers, the topology to
/// re-declare, and the reconnection loop over the URL's endpoints (in `endpoints_` order,
/// shuffled once). Every member function runs on `strand_`, except the readers of atomics and
/// `broker()`, which copies under `broker_mutex_`.
class transport_state : public std::enable_shared_from_this<transport_state> {
public:
    using completion = letterbox::detail::unique_function<void(std::error_code)>;
    using get_completion =
        letterbox::detail::unique_function<void(std::error_code, std::optional<delivery>)>;
    using depth_completion =
        letterbox::detail::unique_function<void(std::error_code, std::uint32_t)>;

    struct subscription {
        consume_options options;
        std::function<void(delivery)> on_delivery;
        std::shared_ptr<channel_core> ch;
        bool started = false;
        std::deque<delivery> pending;
        // Between async_consume and basic.consume-ok: a cancel then waits for the consume-ok.
        bool subscribing = false;
        bool cancelled = false;
        std::vector<letterbox::detail::unique_function<void(std::error_code)>> cancel_waiters;
        // Run once the deliveries that arrived before the consume completion were handed out.
        std::vector<letterbox::detail::unique_function<void()>> after_started;
    };
    using consume_completion =
        letterbox::detail::unique_function<void(std::error_code, std::shared_ptr<subscription>)>;

    transport_state(boost::asio::any_io_executor ex, url u, transport_options o)
        : strand_(boost::asio::make_strand(ex))
        , url_(std::move(u))
        , options_(std::move(o))
        , timer_(strand_)
        , delay_(options_.reconnect_delay_min)
        , endpoints_(endpoint_order(url_.endpoints(), options_.shuffle_endpoints,
                                    options_.endpoint_shuffle_seed)) {
        if (options_.publish_window == 0)
            options_.publish_window = 1;
    }

    const connection_core::strand_type& strand() const noexcept { return strand_; }

    void start() { connect_now(); }
    void declare(const topology::exchange& x, completion done);
    void declare(const topology::queue& q, completion done);
    void bind(const topology::binding& b, completion done);
    void publish(message m, completion done);
    void consume(consume_options o, std::function<void(delivery)> on_delivery,
                 consume_completion done);
    void start_delivering(const std::shared_ptr<subscription>& sub);
    void cancel(const std::string& tag, completion done);
    /// Acks, nacks or rejects delivery `tag` of `channel` (`requeue` for the last two).
    void settle(std::uint64_t channel, std::uint64_t tag, letterbox::detail::settlement how,
                bool requeue, completion done);
    void get(const std::string& queue, get_completion done);
    void depth(const std::string& queue, depth_completion done);
    void close(completion done);

    // `f` runs once, at the next loss of the connection (success) or at `close` (`closed`);
    // the returned id takes it back (`unwatch_disconnect`).
    std::uint64_t watch_disconnect(completion f);
    void unwatch_disconnect(std::uint64_t id) { disconnect_watchers_.remove(id); }
    /// Drops the current connection as a network failure would (for recovery tests).
    void drop_connection();
    bool is_open() const noexcept { return phase_ == phase::open; }
    /// Whether the connection is open and recovered (`phase_ == open`), readable from any
    /// thread (for readiness checks).
    bool connected() const noexcept { return connected_.load(std::memory_order_acquire); }
    /// Consumer and get channels the broker closed by the consumer timeout (any thread).
    std::uint64_t consumer_timeouts() const noexcept {
        return consumer_timeouts_.load(std::memory_order_relaxed);
    }
    /// The endpoint of the open and recovered connection, if any (any thread: `endpoints_`
    /// never changes after construction, and the index is atomic).
    std::optional<endpoint> connected_endpoint() const {
        const auto i = connected_endpoint_.load(std::memory_order_acquire);
        if (i == 0)
            return std::nullopt;
        return endpoints_[i - 1];
    }
    /// The broker of the latest connection (its version and profile), if one opened yet; kept
    /// while the transport reconnects (any thread).
    std::optional<broker_info> broker() const {
        const std::lock_guard<std::mutex> lock(broker_mutex_);
        return broker_;
    }

private:
    enum class phase { connecting, recovering, open, backoff, closed };
    using rpc_done = channel_core::rpc_done;
    using channel_ready =
        letterbox::detail::unique_function<void(std::error_code, std::shared_ptr<channel_core>)>;
    using channel_setup =
        letterbox::detail::unique_function<void(const std::shared_ptr<channel_core>&, completion)>;

    // A channel opened on first use and again after it closed; callers arriving while it opens
    // wait for it.
    struct lazy_channel {
        std::shared_ptr<channel_core> ch;
        bool opening = false;
        std::vector<channel_ready> waiters;
    };
    struct outgoing {
        message msg;
        completion done;
    };
    struct in_flight {
        completion done;
        std::string exchange;
        std::string routing_key;
        std::optional<std::string> message_id;
        bool returned = false;
    };
    // A channel whose deliveries can be settled, with the tags it still owes an answer for,
    // and the acks of this strand turn, sent together by flush_acks.
    struct settle_entry {
        std::shared_ptr<channel_core> ch;
        std::set<std::uint64_t> unacked;
        bool retired = false;
        std::vector<std::uint64_t> acks{};
        bool flush_posted = false;
    };
    using declaration = std::variant<topology::exchange, topology::queue, topology::binding>;

    void with_connection(completion then);
    void connect_now();
    void on_connected(std::uint64_t generation, std::error_code ec);
    void on_connection_lost(std::uint64_t generation, std::error_code ec);
    // The next attempt after one ended: at once while the round lasts, else after the backoff.
    void schedule_reconnect();
    void set_disconnected() noexcept {
        connected_.store(false, std::memory_order_release);
        connected_endpoint_.store(0, std::memory_order_release);
    }
    // Reads the new connection's broker (version, profile) and reports it to the observer.
    void identify_broker();
    void recover_topology(std::size_t next);
    void recover_consumers(std::vector<std::shared_ptr<subscription>> subs, std::size_t next);
    void opened();
    void fail_waiters(std::error_code ec);

    void acquire(const std::shared_ptr<lazy_channel>& lc, channel_setup setup, channel_ready done);
    void admin_call(codec::method m, channel_core::reply_filter filter, rpc_done done,
                    int attempts = 3);
    void declare_now(const declaration& d, completion done);
    void record(const declaration& d);
    /// Declares `d` once connected, and records it for the recovery if the broker accepted it.
    void declare_and_record(declaration d, completion done);

    void pump();
    void setup_publisher(const std::shared_ptr<channel_core>& ch, completion done);
    void on_publisher_command(std::uint64_t uid, codec::command&& cmd);
    void on_publisher_closed(std::uint64_t uid, std::error_code ec, const std::string& text);
    void confirm(std::uint64_t seq, bool multiple, bool ack);
    void fail_outbox(std::error_code ec);
    void fail_unconfirmed(std::error_code ec);

    void subscribe_now(const std::shared_ptr<subscription>& sub, completion done);
    // Direct reply-to: the reply consumer lives on the publishing channel, because RabbitMQ
    // takes a request naming `amq.rabbitmq.reply-to` only on the channel that consumes it.
    void subscribe_replies(const std::shared_ptr<subscription>& sub, completion done);
    void consume_replies_on(const std::shared_ptr<channel_core>& ch, completion done);
    void cancel_replies(const std::shared_ptr<subscription>& sub, completion done);
    void on_consumer_command(const std::weak_ptr<subscription>& sub, std::uint64_t uid,
                             codec::command&& cmd);
    void on_consumer_closed(const std::weak_ptr<subscription>& sub, std::uint64_t uid);
    // Counts a consumer or get channel that the broker closed by the consumer timeout.
    void count_close(std::error_code ec, const std::string& text) noexcept {
        if (letterbox::detail::is_consumer_timeout(ec, text))
            consumer_timeouts_.fetch_add(1, std::memory_order_relaxed);
    }
    void retire(std::uint64_t uid);
    void flush_acks(std::uint64_t uid);
    void cancel_now(const std::shared_ptr<subscription>& sub, completion done);

    bool connection_usable() const { return conn_ && conn_->is_open() && !closed_; }

    connection_core::strand_type strand_;
    url url_;
    transport_options options_;
    boost::asio::steady_timer timer_;
    std::chrono::milliseconds delay_;
    std::shared_ptr<connection_core> conn_;
    std::uint64_t generation_ = 0;
    phase phase_ = phase::connecting;
    std::atomic<bool> connected_{false}; // phase_ == open, for other threads
    // Every endpoint of the URL, in the order they are tried (shuffled once, or as written).
    const std::vector<endpoint> endpoints_;
    std::size_t next_endpoint_ = 0;     // the index in endpoints_ of the next attempt
    std::size_t current_endpoint_ = 0;  // the index of the attempt in progress (or connected)
    std::size_t attempts_in_round_ = 0; // attempts since the last backoff wait
    // 1 + the index of the connected endpoint while phase_ == open, else 0 (other threads).
    std::atomic<std::size_t> connected_endpoint_{0};
    std::atomic<std::uint64_t> consumer_timeouts_{0};
    // The broker of the latest connection, written on the strand, read from any thread.
    mutable std::mutex broker_mutex_;
    std::optional<broker_info> broker_;
    bool closed_ = false;
    std::vector<completion> waiters_;
    std::vector<completion> close_waiters_;
    letterbox::detail::disconnect_watchers disconnect_watchers_;

    std::vector<declaration> declared_;
    std::shared_ptr<lazy_channel> admin_ = std::make_shared<lazy_channel>();
    std::shared_ptr<lazy_channel> publisher_ = std::make_shared<lazy_channel>();
    std::map<std::string, std::shared_ptr<lazy_channel>> getters_;

    std::deque<outgoing> outbox_;
    std::map<std::uint64_t, in_flight> unconfirmed_;
    std::uint64_t next_seq_ = 0;
    std::uint64_t publisher_uid_ = 0;
    bool pump_waiting_ = false;
    // Ids for publishes of messages with the nil id (message.hpp); used on the strand only.
    message_id_generator ids_{};

    std::map<std::string, std::shared_ptr<subscription>> subscriptions_;
    // The direct reply-to consumer, if any (one per transport: one per publishing channel).
    std::shared_ptr<subscription> reply_sub_;
    std::map<std::uint64_t, settle_entry> channels_;
    std::uint64_t next_tag_ = 0;
};

} // namespace letterbox::amqp::detail

#if LETTERBOX_HEADER_ONLY
#include <letterbox/amqp/detail/impl/transport_state.hpp>
#include <letterbox/amqp/detail/impl/transport_state_consuming.hpp>
#include <letterbox/amqp/detail/impl/transport_state_publishing.hpp>
#include <letterbox/amqp/detail/impl/transport_state_settling.hpp>
#include <letterbox/amqp/detail/impl/transport_state_topology.hpp>
#endif
