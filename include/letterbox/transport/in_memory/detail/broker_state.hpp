// SPDX-License-Identifier: BSL-1.0
#pragma once

// The RabbitMQ model's state machine. Private: use `in_memory::broker`, `connection` and
// `channel`. Every rule here cites the catalogue (research/reliability-anchors.md) or the
// 3.10.8 observations (§0.3) it implements; docs/in-memory-transport.md lists them.
//
// This header declares the class; its member functions are defined in impl/broker_state_*.hpp,
// one file per concern (routing, queue contents, expiry, delivery, returns, dead-lettering, ...),
// included at the end. The state it works on is declared in envelope.hpp, queue_state.hpp,
// channel_state.hpp, exchange_state.hpp and broker_events.hpp.

#include <letterbox/basic_properties.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/consumer_timeout.hpp>
#include <letterbox/detail/unique_function.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/direct_reply_to.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/topic_match.hpp>
#include <letterbox/transport/in_memory/basic_delivery.hpp>
#include <letterbox/transport/in_memory/broker_counters.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>
#include <letterbox/transport/in_memory/close_reason.hpp>
#include <letterbox/transport/in_memory/detail/broker_events.hpp>
#include <letterbox/transport/in_memory/detail/channel_state.hpp>
#include <letterbox/transport/in_memory/detail/clock_adapter.hpp>
#include <letterbox/transport/in_memory/detail/declare_rules.hpp>
#include <letterbox/transport/in_memory/detail/envelope.hpp>
#include <letterbox/transport/in_memory/detail/exchange_state.hpp>
#include <letterbox/transport/in_memory/detail/expiration.hpp>
#include <letterbox/transport/in_memory/detail/headers_match.hpp>
#include <letterbox/transport/in_memory/detail/priority_order.hpp>
#include <letterbox/transport/in_memory/detail/queue_state.hpp>
#include <letterbox/transport/in_memory/handlers.hpp>
#include <letterbox/transport/in_memory/queue_info.hpp>
#include <letterbox/transport/in_memory/returned_message.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};

/// How a message came back to its queue; decides the quorum delivery count and position.
enum class return_kind { nack, reject, recover, channel_closed };

class broker_state : public std::enable_shared_from_this<broker_state> {
public:
    broker_state(std::unique_ptr<clock_adapter> clock, const broker_profile& profile,
                 std::size_t max_message_size, std::uint64_t message_id_seed);
    broker_state(const broker_state&) = delete;
    broker_state& operator=(const broker_state&) = delete;
    ~broker_state();

    // Runs queued callbacks when the outermost broker operation ends.
    class scope {
    public:
        explicit scope(broker_state& b)
            : b_(b) {
            ++b_.depth_;
        }
        scope(const scope&) = delete;
        scope& operator=(const scope&) = delete;
        ~scope() noexcept(false) {
            if (--b_.depth_ != 0 || std::uncaught_exceptions() != 0)
                return;
            b_.flush();
        }

    private:
        broker_state& b_;
    };

    const broker_profile& profile() const noexcept { return profile_; }
    const broker_counters& counters() const noexcept { return counters_; }
    std::int64_t now() const { return clock_->now_ns(); }
    // The broker's seeded id sequence (broker::generate_message_id).
    message_id next_message_id() { return ids_(); }

    // ---- connections and channels -----------------------------------------------------

    // While the broker is down (go_down) a connection attempt is refused: the client gets a
    // connection that is already closed, which the broker does not list and which takes no id
    // (so ids, and the consumer tags made from them, do not depend on how often a client
    // retried during an outage).
    std::shared_ptr<connection_state> open_connection(std::string name);

    std::shared_ptr<channel_state> open_channel(connection_state& c);

    void close_channel(channel_state& ch, close_reason why);

    // The rest of a channel's close, once it is marked closed (and so takes no delivery).
    void wind_down(channel_state& ch, close_reason why);

    void close_connection(connection_state& c, close_reason why);

    // ---- exchanges ---------------------------------------------------------------------

    std::error_code exchange_declare(channel_state& ch, const topology::exchange& x, bool passive);

    std::error_code exchange_delete(channel_state& ch, std::string_view name, bool if_unused);

    std::error_code bind(channel_state& ch, const topology::binding& b, bool unbind);

    // ---- queues ------------------------------------------------------------------------

    queue_declare_ok queue_declare(channel_state& ch, const topology::queue& decl, bool passive,
                                   std::error_code& ec);

    std::size_t queue_purge(channel_state& ch, std::string_view name, std::error_code& ec);

    std::size_t queue_delete(channel_state& ch, std::string_view name, bool if_unused,
                             bool if_empty, std::error_code& ec);

    // ---- basic -------------------------------------------------------------------------

    std::error_code basic_qos(channel_state& ch, std::uint16_t prefetch, bool global);

    std::error_code confirm_select(channel_state& ch);

    // `msg` by rvalue reference: `channel` already owns a copy, and a message is ~470 bytes.
    std::error_code basic_publish(channel_state& ch, message&& msg, bool mandatory);

    std::string basic_consume(channel_state& ch, std::string_view queue, basic_consume_options opts,
                              delivery_callback on_delivery, cancel_handler on_cancel,
                              std::error_code& ec);

    std::error_code basic_cancel(channel_state& ch, std::string_view tag);

    std::optional<basic_delivery> basic_get(channel_state& ch, std::string_view queue, bool no_ack,
                                            std::error_code& ec);

    std::error_code settle(channel_state& ch, std::uint64_t tag, bool multiple, bool ack,
                           bool requeue, return_kind how);

    std::error_code basic_recover(channel_state& ch, bool requeue);

    // ---- observation -------------------------------------------------------------------

    std::optional<queue_info> info(std::string_view name) const;

    std::vector<std::string> queue_names() const;

    bool has_exchange(std::string_view name) const {
        return exchanges_.find(name) != exchanges_.end();
    }

    std::vector<topology::binding> bindings_of(std::string_view exchange) const;

    /// Totals over every queue: (ready, unacked).
    std::pair<std::size_t, std::size_t> totals() const;

    std::size_t open_connections() const noexcept { return connections_.size(); }

    std::size_t open_channels() const noexcept;

    // ---- faults ------------------------------------------------------------------------

    void nack_nth_publish(std::uint64_t n) { nack_publish_at_ = n == 0 ? 0 : publishes_ + n; }
    void lose_nth_confirm(std::uint64_t n) { lose_confirm_at_ = n == 0 ? 0 : publishes_ + n; }

    void sever_all();

    // A network outage: every connection is lost (their unacknowledged deliveries requeued,
    // as the broker does when it notices a dead connection) and new ones are refused until
    // come_back. Unlike restart, every queue, message and binding stays, and TTL timers keep
    // running: the broker is alive, only unreachable.
    void go_down();

    // Ends the outage; returns the waiters registered with when_up, for the caller to run.
    std::vector<letterbox::detail::unique_function<void()>> come_back();

    bool is_down() const noexcept { return down_; }
    std::uint64_t refused_connections() const noexcept { return refused_connections_; }

    // Keeps `f` until come_back (the caller checked that the broker is down).
    void when_up(letterbox::detail::unique_function<void()> f);

    void restart();

private:
    // ---- helpers: errors ---------------------------------------------------------------

    std::error_code check_open(channel_state& ch) const;

    std::error_code channel_error(channel_state& ch, errc e, const std::string& text);

    // A hard error (540 NOT_IMPLEMENTED...): RabbitMQ answers with connection.close, so every
    // channel of the connection closes with the same reason.
    std::error_code connection_error(channel_state& ch, errc e, const std::string& text);

    std::error_code inequivalent(channel_state& ch, const std::string& arg, const char* kind,
                                 const std::string& name, const std::string& received,
                                 const std::string& current);

    static std::string bool_text(bool b) { return b ? "'true'" : "'false'"; }

    std::error_code check_exclusive(channel_state& ch, const queue_state& q,
                                    bool flag_differs = false);

    queue_state* find_queue(channel_state& ch, std::string_view name, std::error_code& ec);

    static std::shared_ptr<channel_state> shared_channel(channel_state& ch) {
        return ch.self.lock();
    }

    // ---- helpers: routing --------------------------------------------------------------

    void route_exchange(const exchange_state& x, std::span<const std::string_view> keys,
                        const message& msg, std::vector<queue_state*>& out,
                        std::vector<const exchange_state*>& seen);

    // Routes with the publish key plus the CC and BCC keys (sender-selected distribution).
    // `x`, when given, is the exchange the caller already looked up for `env->msg.exchange`.
    void route(const std::shared_ptr<const envelope>& env, std::vector<queue_state*>& out,
               const std::string* explicit_key = nullptr, const exchange_state* x = nullptr);

    // ---- helpers: queue contents -------------------------------------------------------

    std::int64_t deadline_for(const queue_state& q, std::int64_t message_ttl_ms) const;

    bool over_limit(const queue_state& q, std::size_t extra_count, std::size_t extra_bytes) const;

    topology::overflow_behaviour overflow_of(const queue_state& q) const;

    // Stores one copy; returns false when overflow refused it (the publisher gets a nack).
    bool enqueue(queue_state& q, std::shared_ptr<const envelope> env, std::int64_t message_ttl_ms);

    void drop_head_while_over(queue_state& q);

    // ---- helpers: expiry ---------------------------------------------------------------

    // Expired messages leave only from the head of the queue (RMQ-TTL-04).
    void expire_heads(queue_state& q, std::int64_t t);

    void schedule(queue_state& q);

    // x-expires (RMQ-TTL-08): a queue is deleted once it has been unused for the period, its
    // messages dropped without dead-lettering. Unused means no consumer and no basic.get or
    // queue.declare (passive too); each of those, and the last consumer leaving, starts the
    // period again (rabbit_amqqueue_process:ensure_expiry_timer). A timer that fires while the
    // queue has consumers does nothing: the last one to leave starts a new period.
    void touch(queue_state& q);

    // ---- helpers: consumer timeout (§2.18) ---------------------------------------------
    // A channel whose oldest unacknowledged delivery is older than its consumer timeout at one
    // of its ticks closes with 406 (rabbit_channel:evaluate_consumer_timeout). The model keeps
    // one timer per channel, armed only while the channel holds unacknowledged deliveries, for
    // the first tick that can close it; the ticks in between could not, so they are skipped.

    // Lists `ch` for `review_ack_timers`: it handed out a delivery, or settled its last one.
    void review_acks_later(channel_state& ch);

    // Runs when the outermost operation ends (flush): stamps the deliveries still unacknowledged
    // that it handed out with the time, read once (not once per delivery: a clock read is a
    // quarter of the publish-deliver-ack path), then arms the timer of each listed channel
    // that holds unacknowledged deliveries and cancels the timer of one that holds none. A
    // delivery acknowledged within the operation that made it costs no clock read and no timer.
    void review_ack_timers();

    // Arms the tick that may close `ch`: the first tick strictly after its oldest
    // unacknowledged delivery's deadline.
    void arm_ack_timer(channel_state& ch);

    // The channel's tick `at`: closes it when its oldest unacknowledged delivery was delivered
    // more than the timeout before `at`, else arms the next tick that may.
    void ack_tick(channel_state& ch, std::int64_t at);

    // ---- helpers: delivery -------------------------------------------------------------

    // After anything that changes a queue: deliver what can be delivered, expire the head,
    // re-arm the expiry timer. A just-published message with TTL 0 may still reach a waiting
    // consumer (RMQ-TTL-06), so delivery runs before the inclusive expiry check.
    void after_change(queue_state& q, bool fresh_publish);

    // The time, read from the clock at most once and only when a head message can expire:
    // a clock read costs a vDSO call (a quarter of the publish-deliver-ack path when read
    // unconditionally), and most queues carry no TTL. No callback runs inside `after_change`,
    // so a virtual clock cannot move between the reads this replaces.
    struct lazy_now {
        const broker_state& b;
        std::int64_t t = no_expiry;
        std::int64_t operator()() {
            if (t == no_expiry)
                t = b.now();
            return t;
        }
    };

    void dispatch_channel(channel_state& ch);

    static bool has_capacity(const consumer_state& c);

    // Round-robin over consumers with spare prefetch (RMQ-ACK-20); on a single-active-consumer
    // queue, only to its active consumer.
    // A just-published message counts as expired only strictly after its deadline.
    void dispatch(queue_state& q, bool fresh_publish, lazy_now& t);

    basic_delivery hand_out(channel_state& ch, const std::shared_ptr<queue_state>& q,
                            std::shared_ptr<consumer_state> c, queued m, bool no_ack, bool by_get);

    void release(channel_state& ch, unacked_entry& e);

    static void compact(channel_state& ch);

    // ---- helpers: returns --------------------------------------------------------------

    void requeue_all(channel_state& ch, return_kind how);

    void requeue_one(queue_state& q, queued m, return_kind how);

    // Marks a returned message redelivered and counts the return. A quorum queue's delivery
    // count may pass its limit: then the message is dead-lettered instead and this is false.
    bool count_return(queue_state& q, queued& m, return_kind how);

    void place_returned(queue_state& q, queued m, return_kind how);

    // ---- helpers: dead-lettering -------------------------------------------------------

    struct pending_dead_letter {
        std::shared_ptr<queue_state> queue;
        queued m;
        dead_letter_reason reason;
    };

    // Dead letters are processed in FIFO order after the operation that caused them, so a
    // chain of dead-letterings never recurses and keeps its order (DLX-07, DLX-42..45).
    void dead_letter(queue_state& q, queued m, dead_letter_reason r);

    void process_dead_letters();

    field_table make_death_entry(const queue_state& q, const envelope& env,
                                 dead_letter_reason r) const;

    void update_history(message& msg, const queue_state& q, const envelope& env,
                        dead_letter_reason r) const;

    // A dead letter that would reach a queue it already died in, with no rejection in the
    // history up to that queue's entry, is dropped (RabbitMQ's is_cycle; DLX-18/19/20).
    static bool is_cycle(const std::string& target, const field_array& deaths);

    void republish_dead_letter(queue_state& q, queued m, dead_letter_reason r);

    // ---- helpers: topology changes -----------------------------------------------------

    // The arguments of a queue about to be created, validated as RabbitMQ validates them;
    // std::nullopt after the channel error that refused them.
    std::optional<topology::queue_arguments> new_queue_arguments(channel_state& ch,
                                                                 const topology::queue& decl,
                                                                 const std::string& name,
                                                                 std::error_code& ec);

    void remove_consumer(consumer_state& c);

    void delete_queue(queue_state& q, drop_kind why);

    void remove_exchange(const std::string& name);

    // A consumer's tag: `tag`, or a fresh one when it is empty (the broker's `amq.ctag-`);
    // false after the 530 that refuses a tag the channel already uses.
    bool take_consumer_tag(channel_state& ch, std::string& tag, std::error_code& ec);

    // ---- direct reply-to (impl/broker_state_reply_to.hpp) --------------------------------

    // basic.consume from the pseudo-queue `amq.rabbitmq.reply-to`: one no-ack reply consumer
    // per channel.
    std::string reply_consume(channel_state& ch, basic_consume_options opts,
                              delivery_callback on_delivery, cancel_handler on_cancel,
                              std::error_code& ec);

    // A publish whose reply_to is the pseudo-queue gets the channel's reply address instead;
    // a channel without a reply consumer cannot send one (406).
    std::error_code set_reply_address(channel_state& ch, message& msg);

    // Delivers a publish to `amq.rabbitmq.reply-to.<key>` on the default exchange to the
    // channel the key names, if it still consumes replies. Routing goes on regardless.
    void deliver_reply(const std::shared_ptr<const envelope>& env);

    // queue.declare of the pseudo-queue or of a reply address; std::nullopt for other names.
    std::optional<queue_declare_ok> declare_reply_queue(channel_state& ch, const std::string& name,
                                                        std::error_code& ec);

    // The channel's reply consumer is gone (cancelled, or the channel closed).
    void forget_reply_consumer(channel_state& ch);

    // ---- events ------------------------------------------------------------------------

    // Runs what the outermost operation left behind: dead letters first (they may cause more
    // events), then each callback. A callback that calls the broker opens a nested scope, whose
    // leftovers this loop picks up.
    void flush();

    void deliver_event(ev_deliver& e);
    void deliver_event(ev_confirm& e);
    void deliver_event(ev_return& e);
    void deliver_event(ev_cancel& e);
    void deliver_event(ev_channel_closed& e);
    void deliver_event(ev_connection_closed& e);

    std::unique_ptr<clock_adapter> clock_;
    broker_profile profile_;
    std::size_t max_message_size_;
    message_id_generator ids_;
    broker_counters counters_;
    std::unordered_map<std::string, exchange_state, string_hash, std::equal_to<>> exchanges_;
    std::unordered_map<std::string, std::shared_ptr<queue_state>, string_hash, std::equal_to<>>
        queues_;
    std::vector<std::shared_ptr<connection_state>> connections_;
    std::vector<event> events_; // FIFO: events_[event_head_] is the next to run
    std::size_t event_head_ = 0;
    std::deque<pending_dead_letter> pending_dead_letters_;
    std::vector<queue_state*> route_scratch_;
    std::vector<const exchange_state*> seen_scratch_;
    std::vector<unacked_entry*> picked_scratch_;
    std::vector<queue_state*> touched_scratch_;
    std::vector<std::shared_ptr<queue_state>> channel_queues_scratch_;
    std::vector<std::weak_ptr<channel_state>> ack_reviews_;
    std::uint64_t last_id_ = 0;
    std::uint64_t last_seq_ = 0;
    std::uint64_t generated_names_ = 0;
    std::uint64_t publishes_ = 0;
    std::uint64_t nack_publish_at_ = 0;
    std::uint64_t lose_confirm_at_ = 0;
    std::uint64_t refused_connections_ = 0;
    std::vector<letterbox::detail::unique_function<void()>> up_waiters_;
    // Reply keys (`amq.rabbitmq.reply-to.<key>`) of the channels that consume replies.
    std::map<std::string, std::weak_ptr<channel_state>, std::less<>> reply_channels_;
    std::uint64_t reply_keys_ = 0;
    bool down_ = false;
    int depth_ = 0;
};

} // namespace letterbox::in_memory::detail

#if LETTERBOX_HEADER_ONLY
#include <letterbox/transport/in_memory/detail/impl/broker_state_basic.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_connections.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_dead_letters.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_delivery.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_errors.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_events.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_expiry.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_faults.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_observation.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_queue_contents.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_reply_to.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_returns.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_routing.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_topology.hpp>
#endif
