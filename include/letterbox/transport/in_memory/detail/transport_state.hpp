// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state of an `in_memory::transport`: its connection to the broker and its channels (one
// confirm-mode publishing channel, one for topology, one per consumer, one per queue read with
// basic.get), the publishes awaiting confirms, the consumers, and the reconnection after a lost
// connection. Private: use `in_memory::transport`. Its member functions are defined in
// impl/transport_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/disconnect_watchers.hpp>
#include <letterbox/detail/settlement.hpp>
#include <letterbox/detail/unique_function.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/direct_reply_to.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/channel.hpp>
#include <letterbox/transport/in_memory/close_reason.hpp>
#include <letterbox/transport/in_memory/connection.hpp>
#include <letterbox/transport/in_memory/returned_message.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

// The transport's state lives behind a shared_ptr so handlers queued on the executor can
// outlive a moved-from or destroyed transport object safely.
class transport_state : public std::enable_shared_from_this<transport_state> {
public:
    using completion = letterbox::detail::unique_function<void(std::error_code)>;

    transport_state(in_memory::broker& b, std::string name)
        : broker_(&b)
        , name_(std::move(name)) {}
    transport_state(const transport_state&) = delete;
    transport_state& operator=(const transport_state&) = delete;
    ~transport_state();

    boost::asio::any_io_executor executor() const { return broker_->get_executor(); }
    const broker_profile& profile() const noexcept { return broker_->profile(); }

    void start() { connect(); }

    std::error_code declare(const topology::exchange& x);
    std::error_code declare(const topology::queue& q);
    // A passive declare: the ready count. A missing queue closes the admin channel (404) as on
    // RabbitMQ; `with_admin` opens a new one for the next operation.
    std::uint32_t depth(const std::string& queue, std::error_code& ec);

    // `basic.get` with manual acknowledgement, on the queue's own channel (see `getter`).
    std::optional<delivery> get(const std::string& queue, std::error_code& ec);

    std::error_code bind(const topology::binding& b);

    void publish(message&& m, completion done);

    // A consumer. Until its `async_consume` completion has run, its deliveries wait in
    // `pending`: the concept promises `on_delivery` calls only after that completion, as an
    // AMQP client sees `basic.consume-ok` before the first `basic.deliver`.
    struct subscription {
        consume_options options;
        std::function<void(delivery)> on_delivery;
        channel ch;
        bool started = false;
        std::deque<delivery> pending;
    };

    std::shared_ptr<subscription> consume(const consume_options& o,
                                          std::function<void(delivery)> on_delivery,
                                          std::error_code& ec);

    // Runs after the consumer's completion: hands over what arrived meanwhile, then lets
    // deliveries through directly. The consumer may have been cancelled in between; what it
    // was sent before the cancel still reaches it, as with a real broker. Deliveries whose
    // channel died were requeued by the broker and are dropped here.
    void start_delivering(const std::shared_ptr<subscription>& sub);

    std::error_code cancel(const std::string& tag);

    // Settles the delivery `tag` of the channel `channel` (`delivery::channel`).
    std::error_code settle(std::uint64_t channel, std::uint64_t tag,
                           letterbox::detail::settlement how, bool requeue);

    void close();

    in_memory::connection& connection() noexcept { return conn_; }

    // `f` runs once, at the next loss of the connection (success) or at `close` (`closed`);
    // the returned id takes it back (`unwatch_disconnect`).
    std::uint64_t watch_disconnect(completion f);
    void unwatch_disconnect(std::uint64_t id) { disconnect_watchers_.remove(id); }

    /// Whether the transport's connection is open (set on the executor, readable anywhere).
    bool connected() const noexcept { return connected_.load(std::memory_order_acquire); }

    /// Channels the broker closed for a delivery left unacknowledged past the consumer
    /// timeout (readable anywhere).
    std::uint64_t consumer_timeouts() const noexcept {
        return consumer_timeouts_.load(std::memory_order_relaxed);
    }

private:
    struct pending_publish {
        std::uint64_t seq;
        completion done;
        bool returned;
    };
    // The publishes awaiting a confirm, in sequence order. A deque rather than a map keyed by
    // sequence number: publishes get increasing numbers, so a new one goes at the back and a
    // confirm usually settles the front, without a node allocated per publish (it showed in the
    // profile of benchmarks/in_memory).
    using pending_list = std::deque<pending_publish>;

    // The publish `seq` awaits a confirm: in order, as a map would hold it (one already there
    // stays, and `done` is dropped, as `map::emplace` does).
    void add_pending(std::uint64_t seq, completion done);
    // The publish with sequence number `seq`, or `pending_.end()`.
    pending_list::iterator find_pending(std::uint64_t seq);

    template <class F>
    std::error_code with_admin(F&& f) {
        if (closed_)
            return errc::closed;
        if (!ensure_open())
            return errc::connection_closed;
        if (!admin_.is_open())
            admin_ = conn_.open_channel();
        return f(admin_);
    }

    // The channel for gets from `queue`, opened on first use and registered in `channels_` so
    // `settle` finds it. One per queue: a get on a missing queue closes its channel (404), and
    // that must not requeue what was fetched, and is still held, from other queues.
    channel getter(const std::string& queue);

    // Reconnects after a lost connection (fault or broker restart), as RabbitMQ clients with
    // automatic recovery do: a new connection, new channels, and the same consumers again.
    bool ensure_open();

    void connect();

    // At most one wait at a time, however many operations were refused meanwhile.
    void wait_for_broker();

    // A consumer's channel closed under it. A channel error (settling an unknown delivery tag,
    // 406) requeued its deliveries: consume again on a new channel, as amqp::transport does. A
    // lost connection is left to `connect`, which subscribes every consumer again; a cancelled
    // consumer's channel closing (see `retire`) is no news.
    void on_consumer_channel_closed(const std::shared_ptr<subscription>& sub, std::uint64_t id);

    void on_broker_cancel(const std::string& tag);

    void open_publisher();

    void on_confirm(std::uint64_t seq, bool ack, bool multiple);

    // Fails every publish awaiting a confirm, except the one being published right now: if
    // its own publish closed the channel, it reports that error instead.
    void fail_pending(errc e);

    void on_connection_lost();

    std::error_code subscribe(const std::shared_ptr<subscription>& p);

    // What the broker calls with each delivery to the consumer `p`.
    std::function<void(const basic_delivery&)>
    delivery_callback(const std::shared_ptr<subscription>& p);

    // A cancelled consumer's channel stays open while it still holds unacknowledged deliveries
    // (they can still be settled, as on RabbitMQ), then closes.
    void retire(channel& ch);

    // Counts a consumer or get channel that the broker closed by the consumer timeout.
    void count_close(const close_reason& why) noexcept;

    in_memory::broker* broker_;
    std::string name_;
    in_memory::connection conn_;
    channel publisher_;
    channel admin_;
    pending_list pending_;
    std::map<std::string, std::shared_ptr<subscription>> subscriptions_;
    // The direct reply-to consumer (of `amq.rabbitmq.reply-to`), on the publishing channel.
    std::shared_ptr<subscription> reply_sub_;
    std::map<std::uint64_t, channel> channels_;
    std::map<std::string, channel> getters_;
    std::set<std::uint64_t> retired_;
    letterbox::detail::disconnect_watchers disconnect_watchers_;
    std::uint64_t in_flight_ = 0;
    bool closed_ = false;
    bool waiting_for_broker_ = false;
    std::atomic<bool> connected_{false}; // conn_ is open (for other threads)
    std::atomic<std::uint64_t> consumer_timeouts_{0};
};

} // namespace letterbox::in_memory::detail

#if LETTERBOX_HEADER_ONLY
#include <letterbox/transport/in_memory/detail/impl/transport_state.hpp>
#endif
