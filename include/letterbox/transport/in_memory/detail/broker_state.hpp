// SPDX-License-Identifier: BSL-1.0
#pragma once

// The RabbitMQ model's state machine. Private: use `in_memory::broker`, `connection` and
// `channel`. Every rule here cites the catalogue (research/reliability-anchors.md) or the
// 3.10.8 observations (§0.3) it implements; docs/in-memory-transport.md lists them.

#include <letterbox/basic_properties.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/unique_function.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/topic_match.hpp>
#include <letterbox/transport/in_memory/basic_delivery.hpp>
#include <letterbox/transport/in_memory/broker_counters.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>
#include <letterbox/transport/in_memory/close_reason.hpp>
#include <letterbox/transport/in_memory/detail/clock_adapter.hpp>
#include <letterbox/transport/in_memory/detail/declare_rules.hpp>
#include <letterbox/transport/in_memory/detail/priority_order.hpp>
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

namespace letterbox::in_memory::detail {

inline constexpr std::int64_t no_expiry = std::numeric_limits<std::int64_t>::max();

/// A published message as stored: shared by every queue it was routed to.
struct envelope {
    envelope() = default;
    explicit envelope(message&& m)
        : msg(std::move(m)) {}

    message msg;                  // as delivered: BCC removed
    std::vector<std::string> cc;  // sender-selected keys (CC header, still present)
    std::vector<std::string> bcc; // sender-selected keys (BCC header, removed)
    bool history_is_ours = true;  // false: a client-supplied x-death the profile ignores
};

/// One copy of a message in one queue.
struct queued {
    std::shared_ptr<const envelope> env;
    std::uint64_t seq = 0; // enqueue order: a classic queue's "original position"
    std::int64_t expires_at = no_expiry;
    std::uint32_t delivery_count = 0; // quorum x-delivery-count
    std::uint32_t acquired = 0;       // quorum x-acquired-count (4.3)
    std::uint8_t priority = 0;        // classic priority queue: filed_priority (priority_order.hpp)
    bool redelivered = false;
    std::size_t bytes() const noexcept { return env->msg.body.size(); }
};

struct channel_state;
struct connection_state;
struct queue_state;

struct consumer_state {
    std::string tag;
    std::weak_ptr<queue_state> queue;
    channel_state* channel = nullptr;
    std::uint32_t prefetch = 0;
    bool no_ack = false;
    bool exclusive = false;
    bool active = true;
    std::uint32_t outstanding = 0;
    delivery_handler on_delivery;
    cancel_handler on_cancel;
};

struct queue_state {
    std::weak_ptr<queue_state> self;
    std::string name;
    bool durable = true;
    bool exclusive = false;
    bool auto_delete = false;
    std::uint64_t owner = 0; // connection id of an exclusive queue
    field_table arguments;
    topology::queue_arguments args;
    std::optional<std::int64_t> delivery_limit;
    std::optional<std::uint8_t> max_priority; // classic x-max-priority
    std::deque<queued> ready;   // classic: sorted by priority, then seq (priority_order.hpp)
    std::deque<queued> returns; // quorum with `quorum_returns_first`: served first
    std::size_t ready_bytes = 0;
    std::size_t unacked = 0;
    std::vector<std::shared_ptr<consumer_state>> consumers;
    std::size_t next_consumer = 0;
    std::unique_ptr<timer_adapter> timer;
    std::int64_t timer_deadline = no_expiry;
    // x-expires: the queue is deleted once unused (no consumer, get or declare) until then.
    std::unique_ptr<timer_adapter> expiry_timer;
    std::int64_t unused_until = no_expiry;
    bool deleted = false;

    bool quorum() const noexcept { return args.type == topology::queue_type::quorum; }
    std::size_t ready_count() const noexcept { return ready.size() + returns.size(); }
    queued* head() noexcept {
        if (!returns.empty())
            return &returns.front();
        return ready.empty() ? nullptr : &ready.front();
    }
    queued pop_head() {
        auto& from = returns.empty() ? ready : returns;
        queued m = std::move(from.front());
        from.pop_front();
        ready_bytes -= m.bytes();
        return m;
    }
};

struct unacked_entry {
    std::uint64_t tag = 0;
    std::shared_ptr<queue_state> queue;
    queued m;
    std::shared_ptr<consumer_state> consumer; // null for basic.get
    bool settled = false;
};

struct channel_state {
    std::uint64_t id = 0;
    std::weak_ptr<channel_state> self;
    // Valid while the channel is open. A closed channel's handle may outlive its connection (a
    // hard error closes the connection under it), so a closed channel reads only its own
    // fields, `connection_closed` among them.
    connection_state* connection = nullptr;
    bool open = true;
    bool connection_closed = false; // its connection closed
    close_reason reason;
    std::uint64_t next_tag = 1;
    std::deque<unacked_entry> unacked; // sorted by tag; settled entries leave from the front
    std::size_t live_unacked = 0;
    bool confirm = false;
    std::uint64_t next_seq = 1;
    std::uint32_t consumer_prefetch = 0;
    std::uint32_t global_prefetch = 0;
    std::uint32_t global_outstanding = 0;
    std::uint64_t next_consumer_tag = 1;
    std::map<std::string, std::shared_ptr<consumer_state>, std::less<>> consumers;
    confirm_handler on_confirm;
    return_handler on_return;
    close_handler on_close;
};

struct connection_state {
    std::uint64_t id = 0;
    std::string name;
    bool open = true;
    close_reason reason;
    std::vector<std::shared_ptr<channel_state>> channels;
    close_handler on_close;
};

struct exchange_state {
    topology::exchange decl;
    std::vector<topology::binding> bindings; // bindings whose source is this exchange
    std::optional<std::string> alternate;    // the `alternate-exchange` argument
    bool builtin = false;
};

// Callbacks never run while the broker is mid-operation: they are queued as events and run
// when the outermost operation ends, so a handler may call back into the broker safely.
struct ev_deliver {
    // Raw: a channel_state lives as long as its connection_state, which outlives every event
    // queued before its own ev_connection_closed (events run in FIFO order).
    channel_state* ch;
    std::shared_ptr<consumer_state> consumer;
    basic_delivery d;
};
struct ev_confirm {
    std::shared_ptr<channel_state> ch;
    std::uint64_t seq;
    bool ack;
};
struct ev_return {
    std::shared_ptr<channel_state> ch;
    returned_message r;
};
struct ev_cancel {
    std::shared_ptr<channel_state> ch;
    std::shared_ptr<consumer_state> consumer;
};
struct ev_channel_closed {
    std::shared_ptr<channel_state> ch;
};
struct ev_connection_closed {
    std::shared_ptr<connection_state> conn;
};
using event = std::variant<ev_deliver, ev_confirm, ev_return, ev_cancel, ev_channel_closed,
                           ev_connection_closed>;

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
                 std::size_t max_message_size, std::uint64_t message_id_seed)
        : clock_(std::move(clock))
        , profile_(profile)
        , max_message_size_(max_message_size)
        , ids_(message_id_seed) {
        for (auto [name, type] : {std::pair{"", topology::exchange_type::direct},
                                  std::pair{"amq.direct", topology::exchange_type::direct},
                                  std::pair{"amq.fanout", topology::exchange_type::fanout},
                                  std::pair{"amq.topic", topology::exchange_type::topic},
                                  std::pair{"amq.headers", topology::exchange_type::headers},
                                  std::pair{"amq.match", topology::exchange_type::headers}}) {
            exchange_state x;
            x.decl.name = name;
            x.decl.type = type;
            x.builtin = true;
            exchanges_.emplace(name, std::move(x));
        }
    }

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
    std::shared_ptr<connection_state> open_connection(std::string name) {
        auto c = std::make_shared<connection_state>();
        c->name = std::move(name);
        if (down_) {
            ++refused_connections_;
            c->open = false;
            c->reason = {make_error_code(errc::connection_closed),
                         "connection refused: the broker is unreachable (fault injection)"};
            return c;
        }
        c->id = ++last_id_;
        connections_.push_back(c);
        return c;
    }

    std::shared_ptr<channel_state> open_channel(connection_state& c) {
        auto ch = std::make_shared<channel_state>();
        ch->id = ++last_id_;
        ch->self = ch;
        ch->connection = &c;
        if (!c.open) {
            ch->open = false;
            ch->connection_closed = true;
            ch->reason = c.reason;
        }
        c.channels.push_back(ch);
        return ch;
    }

    void close_channel(channel_state& ch, close_reason why) {
        if (!ch.open)
            return;
        ch.open = false;
        wind_down(ch, std::move(why));
    }

    // The rest of a channel's close, once it is marked closed (and so takes no delivery).
    void wind_down(channel_state& ch, close_reason why) {
        scope s(*this);
        ch.reason = std::move(why);
        requeue_all(ch, return_kind::channel_closed);
        for (auto& [tag, c] : ch.consumers)
            remove_consumer(*c);
        ch.consumers.clear();
        events_.push_back(ev_channel_closed{shared_channel(ch)});
    }

    void close_connection(connection_state& c, close_reason why) {
        if (!c.open)
            return;
        scope s(*this);
        c.open = false;
        c.reason = why;
        // Every channel stops taking deliveries before any of them returns its messages, so a
        // message one channel returns never goes to another that is closing with it.
        std::vector<channel_state*> closing;
        for (auto& ch : c.channels) {
            ch->connection_closed = true;
            if (ch->open) {
                ch->open = false;
                closing.push_back(ch.get());
            }
        }
        for (auto* ch : closing)
            wind_down(*ch, why);
        std::vector<std::string> owned;
        for (auto& [name, q] : queues_)
            if (q->exclusive && q->owner == c.id)
                owned.push_back(name);
        for (auto& name : owned)
            delete_queue(*queues_.at(name), drop_kind::queue_deleted);
        std::shared_ptr<connection_state> keep;
        for (auto& p : connections_)
            if (p.get() == &c)
                keep = p;
        std::erase_if(connections_, [&](const auto& p) { return p.get() == &c; });
        events_.push_back(ev_connection_closed{std::move(keep)});
    }

    // ---- exchanges ---------------------------------------------------------------------

    std::error_code exchange_declare(channel_state& ch, const topology::exchange& x, bool passive) {
        if (auto ec = check_open(ch))
            return ec;
        scope s(*this);
        auto it = exchanges_.find(x.name);
        if (passive) {
            if (it == exchanges_.end() || x.name == "amq.default")
                return channel_error(ch, errc::not_found,
                                     "no exchange '" + x.name + "' in vhost '/'");
            return {};
        }
        if (x.name.empty())
            return channel_error(ch, errc::access_refused,
                                 "operation not permitted on the default exchange");
        if (it != exchanges_.end()) {
            const auto& cur = it->second.decl;
            if (cur.type != x.type)
                return inequivalent(ch, "type", "exchange", x.name,
                                    "'" + std::string(topology::to_string(x.type)) + "'",
                                    "'" + std::string(topology::to_string(cur.type)) + "'");
            if (cur.durable != x.durable)
                return inequivalent(ch, "durable", "exchange", x.name, bool_text(x.durable),
                                    bool_text(cur.durable));
            if (cur.auto_delete != x.auto_delete)
                return inequivalent(ch, "auto_delete", "exchange", x.name, bool_text(x.auto_delete),
                                    bool_text(cur.auto_delete));
            if (cur.internal != x.internal)
                return inequivalent(ch, "internal", "exchange", x.name, bool_text(x.internal),
                                    bool_text(cur.internal));
            const auto* want = x.arguments.find(alternate_exchange_argument);
            const auto* have = cur.arguments.find(alternate_exchange_argument);
            if (!equivalent_argument(want, have)) {
                const bool both = want != nullptr && have != nullptr;
                return inequivalent(ch, std::string(alternate_exchange_argument), "exchange",
                                    x.name, equivalence_side(want, both),
                                    equivalence_side(have, both));
            }
            return {};
        }
        if (x.name.starts_with("amq."))
            return channel_error(ch, errc::access_refused,
                                 "exchange name '" + x.name + "' contains reserved prefix 'amq.*'");
        exchange_state st;
        st.decl = x;
        st.alternate = alternate_exchange_of(x.arguments);
        exchanges_.emplace(x.name, std::move(st));
        return {};
    }

    std::error_code exchange_delete(channel_state& ch, std::string_view name, bool if_unused) {
        if (auto ec = check_open(ch))
            return ec;
        scope s(*this);
        auto it = exchanges_.find(std::string(name));
        if (it == exchanges_.end())
            return {}; // RabbitMQ 3.x: deleting a missing exchange is ok
        if (it->second.builtin)
            return channel_error(ch, errc::access_refused,
                                 "operation not permitted on exchange '" + std::string(name) + "'");
        if (if_unused && !it->second.bindings.empty())
            return channel_error(ch, errc::precondition_failed,
                                 "exchange '" + std::string(name) + "' in vhost '/' in use");
        remove_exchange(std::string(name));
        return {};
    }

    std::error_code bind(channel_state& ch, const topology::binding& b, bool unbind) {
        if (auto ec = check_open(ch))
            return ec;
        scope s(*this);
        auto src = exchanges_.find(b.source);
        const bool to_queue = b.kind == topology::destination_kind::queue;
        if (b.source.empty() || (!to_queue && b.destination.empty()))
            return channel_error(ch, errc::access_refused,
                                 "operation not permitted on the default exchange");
        if (src == exchanges_.end())
            return channel_error(ch, errc::not_found,
                                 "no exchange '" + b.source + "' in vhost '/'");
        if (to_queue) {
            auto q = queues_.find(b.destination);
            if (q == queues_.end())
                return channel_error(ch, errc::not_found,
                                     "no queue '" + b.destination + "' in vhost '/'");
            if (auto ec = check_exclusive(ch, *q->second))
                return ec;
        } else if (exchanges_.find(b.destination) == exchanges_.end()) {
            return channel_error(ch, errc::not_found,
                                 "no exchange '" + b.destination + "' in vhost '/'");
        }
        auto& list = src->second.bindings;
        auto same = std::find(list.begin(), list.end(), b);
        if (unbind) {
            if (same != list.end())
                list.erase(same);
            return {};
        }
        if (src->second.decl.type == topology::exchange_type::topic &&
            profile_.max_topic_hash_words &&
            topology::topic_hash_words(b.routing_key) > *profile_.max_topic_hash_words)
            return channel_error(ch, errc::precondition_failed,
                                 "binding key '" + b.routing_key + "' has too many '#' words");
        if (src->second.decl.type == topology::exchange_type::headers)
            if (auto why = invalid_x_match(b.arguments); !why.empty())
                return channel_error(ch, errc::precondition_failed, std::move(why));
        if (same == list.end())
            list.push_back(b);
        return {};
    }

    // ---- queues ------------------------------------------------------------------------

    queue_declare_ok queue_declare(channel_state& ch, const topology::queue& decl, bool passive,
                                   std::error_code& ec) {
        ec = check_open(ch);
        if (ec)
            return {};
        scope s(*this);
        std::string name = decl.name;
        if (name.empty() && !passive)
            name = "amq.gen-" + std::to_string(++generated_names_);
        auto it = queues_.find(name);
        if (passive) {
            if (it == queues_.end()) {
                ec = channel_error(ch, errc::not_found, "no queue '" + name + "' in vhost '/'");
                return {};
            }
            if ((ec = check_exclusive(ch, *it->second)))
                return {};
            touch(*it->second); // a declare, passive too, is a use (x-expires)
            return {name, it->second->ready_count(), it->second->consumers.size()};
        }
        if (name.starts_with("amq.") && decl.name == name) {
            ec = channel_error(ch, errc::access_refused,
                               "queue name '" + name + "' contains reserved prefix 'amq.*'");
            return {};
        }
        if (it != queues_.end()) {
            // An existing queue: RabbitMQ compares the declaration with it and never validates
            // the arguments again (an invalid one is simply not equivalent).
            auto& q = *it->second;
            // A declaration is strict (rabbit_amqqueue:check_exclusive_access(.., strict)): the
            // exclusive flag must match too, even on the owner's connection.
            if ((ec = check_exclusive(ch, q, q.exclusive != decl.exclusive)))
                return {};
            if (q.durable != decl.durable) {
                ec = inequivalent(ch, "durable", "queue", name, bool_text(decl.durable),
                                  bool_text(q.durable));
                return {};
            }
            if (q.auto_delete != decl.auto_delete) {
                ec = inequivalent(ch, "auto_delete", "queue", name, bool_text(decl.auto_delete),
                                  bool_text(q.auto_delete));
                return {};
            }
            // rabbit_misc:assert_args_equivalence over declare_args(), in its order.
            for (auto arg : compared_queue_arguments) {
                const auto* want = decl.arguments.find(arg);
                const auto* have = q.arguments.find(arg);
                if (arg == topology::args::queue_type ? same_queue_type(want, have)
                                                      : equivalent_argument(want, have))
                    continue;
                const bool both = want != nullptr && have != nullptr;
                ec = inequivalent(ch, std::string(arg), "queue", name, equivalence_side(want, both),
                                  equivalence_side(have, both));
                return {};
            }
            touch(q);
            return {name, q.ready_count(), q.consumers.size()};
        }
        // RabbitMQ first validates the values of the arguments in its declare_args()
        // (rabbit_amqqueue:check_arguments). `x-delivery-limit` is not among them on 3.10, so
        // any value of it passes (seen on 3.10.8: a quorum queue takes `x-delivery-limit: "3"`);
        // the model then gives the queue no delivery limit.
        field_table checked = decl.arguments;
        if (const auto* limit = checked.find(topology::args::delivery_limit);
            limit && !limit->as_integer())
            checked.erase(topology::args::delivery_limit);
        std::string why;
        auto args = topology::queue_arguments::parse(checked, ec, why);
        if (!args) {
            // parse() says "invalid arg 'A': why", or "invalid type 'T' for arg 'A'".
            if (why.starts_with("invalid type"))
                why += " in queue '" + name + "' in vhost '/'";
            else
                why.replace(why.find(':'), 1, " for queue '" + name + "' in vhost '/':");
            ec = channel_error(ch, errc::precondition_failed, why);
            return {};
        }
        // Then the queue's type refuses the arguments it does not take, before it looks at the
        // queue's properties (seen on 3.10.8: `x-max-length: -1` with `x-max-priority` on a
        // quorum queue is refused for the length, a classic queue's `x-delivery-limit: "three"`
        // for its type).
        const bool quorum = args->type == topology::queue_type::quorum;
        if (auto refused = refused_argument(decl.arguments, quorum); !refused.empty()) {
            ec = channel_error(ch, errc::precondition_failed,
                               "invalid arg '" + std::string(refused) + "' for queue '" + name +
                                   "' in vhost '/' of queue type " +
                                   (quorum ? "rabbit_quorum_queue" : "rabbit_classic_queue"));
            return {};
        }
        if (args->type == topology::queue_type::quorum) {
            // rabbit_quorum_queue:declare checks auto-delete, then exclusive, then durable.
            const char* bad = decl.auto_delete ? "auto-delete"
                              : decl.exclusive ? "exclusive-owner"
                              : !decl.durable  ? "non-durable"
                                               : nullptr;
            if (bad) {
                ec = channel_error(ch, errc::precondition_failed,
                                   std::string("invalid property '") + bad + "' for queue '" +
                                       name + "' in vhost '/'");
                return {};
            }
            if (args->overflow == topology::overflow_behaviour::reject_publish_dlx &&
                !profile_.quorum_reject_publish_dlx_is_drop_head) {
                ec = channel_error(
                    ch, errc::precondition_failed,
                    "invalid arg 'x-overflow' for queue '" + name +
                        "' in vhost '/': reject-publish-dlx is not supported by quorum queues");
                return {};
            }
        }
        auto q = std::make_shared<queue_state>();
        q->self = q;
        q->name = name;
        q->durable = decl.durable;
        q->exclusive = decl.exclusive;
        q->auto_delete = decl.auto_delete;
        q->owner = decl.exclusive ? ch.connection->id : 0;
        q->arguments = decl.arguments;
        q->args = *args;
        if (q->quorum()) {
            if (args->delivery_limit)
                q->delivery_limit = *args->delivery_limit < 0 ? std::nullopt : args->delivery_limit;
            else
                q->delivery_limit = profile_.quorum_default_delivery_limit;
        } else {
            q->max_priority = args->max_priority;
        }
        q->timer = clock_->make_timer();
        queues_.emplace(name, q);
        touch(*q);
        return {name, 0, 0};
    }

    std::size_t queue_purge(channel_state& ch, std::string_view name, std::error_code& ec) {
        ec = check_open(ch);
        if (ec)
            return 0;
        scope s(*this);
        auto* q = find_queue(ch, name, ec);
        if (!q)
            return 0;
        const auto n = q->ready_count();
        counters_.dropped[static_cast<std::size_t>(drop_kind::purged)] += n;
        q->ready.clear();
        q->returns.clear();
        q->ready_bytes = 0;
        schedule(*q);
        return n;
    }

    std::size_t queue_delete(channel_state& ch, std::string_view name, bool if_unused,
                             bool if_empty, std::error_code& ec) {
        ec = check_open(ch);
        if (ec)
            return 0;
        scope s(*this);
        auto it = queues_.find(name);
        if (it == queues_.end())
            return 0; // RabbitMQ 3.x: deleting a missing queue is ok
        auto& q = *it->second;
        if ((ec = check_exclusive(ch, q)))
            return 0;
        if (if_unused && !q.consumers.empty()) {
            ec = channel_error(ch, errc::precondition_failed,
                               "queue '" + q.name + "' in vhost '/' in use");
            return 0;
        }
        if (if_empty && q.ready_count() != 0) {
            ec = channel_error(ch, errc::precondition_failed,
                               "queue '" + q.name + "' in vhost '/' not empty");
            return 0;
        }
        const auto n = q.ready_count();
        delete_queue(q, drop_kind::queue_deleted);
        return n;
    }

    // ---- basic -------------------------------------------------------------------------

    std::error_code basic_qos(channel_state& ch, std::uint16_t prefetch, bool global) {
        if (auto ec = check_open(ch))
            return ec;
        scope s(*this);
        if (global) {
            ch.global_prefetch = prefetch;
        } else {
            ch.consumer_prefetch = prefetch;
            if (profile_.consumer_qos_clears_global_qos)
                ch.global_prefetch = 0;
        }
        dispatch_channel(ch);
        return {};
    }

    std::error_code confirm_select(channel_state& ch) {
        if (auto ec = check_open(ch))
            return ec;
        ch.confirm = true;
        return {};
    }

    // `msg` by rvalue reference: `channel` already owns a copy, and a message is ~470 bytes.
    std::error_code basic_publish(channel_state& ch, message&& msg, bool mandatory) {
        if (auto ec = check_open(ch))
            return ec;
        scope s(*this);
        auto xit = msg.exchange == "amq.default" ? exchanges_.end() : exchanges_.find(msg.exchange);
        if (xit == exchanges_.end())
            return channel_error(ch, errc::not_found,
                                 "no exchange '" + msg.exchange + "' in vhost '/'");
        if (xit->second.decl.internal)
            return channel_error(ch, errc::access_refused,
                                 "cannot publish to internal exchange '" + msg.exchange +
                                     "' in vhost '/'");
        if (msg.body.size() > max_message_size_)
            return channel_error(ch, errc::precondition_failed,
                                 "message size " + std::to_string(msg.body.size()) +
                                     " is larger than configured max size " +
                                     std::to_string(max_message_size_));
        std::int64_t ttl_ms = -1;
        if (msg.properties.expiration) {
            std::string why;
            ttl_ms = parse_expiration(*msg.properties.expiration, why);
            if (ttl_ms < 0)
                return channel_error(ch, errc::precondition_failed,
                                     "invalid expiration '" + *msg.properties.expiration +
                                         "': " + why);
        }
        std::vector<std::string> cc, bcc;
        for (auto [header, keys] : {std::pair{headers::cc, &cc}, std::pair{headers::bcc, &bcc}}) {
            if (const auto* v = msg.headers.find(header)) {
                const auto* arr = v->get_if<field_array>();
                if (!arr)
                    return channel_error(ch, errc::precondition_failed,
                                         "invalid message: {unacceptable_type_in_header,\"" +
                                             std::string(header) + "\"," +
                                             std::string(amqp_type_name(*v)) + "}");
                for (const auto& k : *arr)
                    if (const auto* str = k.get_if<std::string>())
                        keys->push_back(*str);
            }
        }
        ++publishes_;
        const std::uint64_t seq = ch.confirm ? ch.next_seq++ : 0;
        if (nack_publish_at_ == publishes_) {
            nack_publish_at_ = 0;
            if (seq != 0) {
                ++counters_.confirms_nacked;
                events_.push_back(ev_confirm{shared_channel(ch), seq, false});
            }
            return {};
        }
        ++counters_.published;
        msg.headers.erase(headers::bcc);
        const bool history_is_ours =
            profile_.client_x_death_is_history || !msg.headers.contains(headers::x_death);
        auto env = std::make_shared<envelope>(std::move(msg)); // one move of the ~470-byte message
        env->cc = std::move(cc);
        env->bcc = std::move(bcc);
        env->history_is_ours = history_is_ours;

        route_scratch_.clear();
        route(env, route_scratch_, nullptr, &xit->second);
        bool refused = false;
        if (route_scratch_.empty()) {
            ++counters_.unroutable;
            if (mandatory) {
                ++counters_.returned;
                events_.push_back(
                    ev_return{shared_channel(ch),
                              returned_message{std::shared_ptr<const message>(env, &env->msg), 312,
                                               "NO_ROUTE", seq}});
            }
        }
        // Dead letters caused below are only queued, never routed, until this operation ends,
        // so the scratch routing result stays valid.
        for (auto* q : route_scratch_)
            refused |= !enqueue(*q, env, ttl_ms);
        for (auto* q : route_scratch_)
            after_change(*q, true);
        if (lose_confirm_at_ == publishes_) {
            lose_confirm_at_ = 0;
            if (seq != 0)
                ++counters_.confirms_lost;
            close_connection(
                *ch.connection,
                {make_error_code(errc::connection_forced),
                 "CONNECTION_FORCED - connection lost before the confirm (fault injection)"});
            return {};
        }
        if (seq != 0) {
            ++(refused ? counters_.confirms_nacked : counters_.confirms_acked);
            events_.push_back(ev_confirm{shared_channel(ch), seq, !refused});
        }
        return {};
    }

    std::string basic_consume(channel_state& ch, std::string_view queue, basic_consume_options opts,
                              delivery_handler on_delivery, cancel_handler on_cancel,
                              std::error_code& ec) {
        ec = check_open(ch);
        if (ec)
            return {};
        scope s(*this);
        auto* q = find_queue(ch, queue, ec);
        if (!q)
            return {};
        if ((ec = check_exclusive(ch, *q)))
            return {};
        const bool taken = std::any_of(q->consumers.begin(), q->consumers.end(),
                                       [](const auto& c) { return c->exclusive; });
        if (taken || (opts.exclusive && !q->consumers.empty())) {
            ec = channel_error(ch, errc::access_refused,
                               "queue '" + q->name + "' in vhost '/' in exclusive use");
            return {};
        }
        if (q->quorum() && ch.global_prefetch != 0) {
            // 540 is a hard error: RabbitMQ closes the whole connection (§0.3 3).
            ec = connection_error(ch, errc::not_implemented,
                                  "queue '" + q->name +
                                      "' in vhost '/' does not support global qos");
            return {};
        }
        if (opts.consumer_tag.empty())
            opts.consumer_tag =
                "amq.ctag-" + std::to_string(ch.id) + "-" + std::to_string(ch.next_consumer_tag++);
        if (ch.consumers.contains(opts.consumer_tag)) {
            ec = channel_error(ch, errc::not_allowed,
                               "attempt to reuse consumer tag '" + opts.consumer_tag + "'");
            return {};
        }
        auto c = std::make_shared<consumer_state>();
        c->tag = opts.consumer_tag;
        c->queue = queues_.at(q->name);
        c->channel = &ch;
        c->prefetch = ch.consumer_prefetch;
        c->no_ack = opts.no_ack;
        c->exclusive = opts.exclusive;
        c->on_delivery = std::move(on_delivery);
        c->on_cancel = std::move(on_cancel);
        ch.consumers.emplace(c->tag, c);
        q->consumers.push_back(c);
        after_change(*q, false);
        return c->tag;
    }

    std::error_code basic_cancel(channel_state& ch, std::string_view tag) {
        if (auto ec = check_open(ch))
            return ec;
        scope s(*this);
        auto it = ch.consumers.find(tag);
        if (it == ch.consumers.end())
            return {};
        auto c = it->second;
        ch.consumers.erase(it);
        remove_consumer(*c);
        return {};
    }

    std::optional<basic_delivery> basic_get(channel_state& ch, std::string_view queue, bool no_ack,
                                            std::error_code& ec) {
        ec = check_open(ch);
        if (ec)
            return std::nullopt;
        scope s(*this);
        auto* q = find_queue(ch, queue, ec);
        if (!q)
            return std::nullopt;
        if ((ec = check_exclusive(ch, *q)))
            return std::nullopt;
        touch(*q); // a get, even an empty one, is a use (x-expires)
        expire_heads(*q, now());
        if (q->ready_count() == 0)
            return std::nullopt;
        auto d = hand_out(ch, queues_.at(q->name), nullptr, q->pop_head(), no_ack, true);
        // A classic queue (rabbit_amqqueue_process:fetch) drops the expired messages at the new
        // head before the count is read, so an expired run behind the fetched message is not
        // counted. A 3.10 quorum queue counts them (seen on 3.10.8).
        if (!q->quorum())
            expire_heads(*q, now());
        d.message_count = static_cast<std::uint32_t>(q->ready_count());
        after_change(*q, false);
        return d;
    }

    std::error_code settle(channel_state& ch, std::uint64_t tag, bool multiple, bool ack,
                           bool requeue, return_kind how) {
        if (auto ec = check_open(ch))
            return ec;
        scope s(*this);
        // Scratch vectors, not locals: settle never re-enters itself (callbacks wait for
        // flush()), and a malloc per ack showed in the profile (benchmarks/in_memory).
        auto& picked = picked_scratch_;
        picked.clear();
        if (tag == 0 && multiple) {
            for (auto& e : ch.unacked)
                if (!e.settled)
                    picked.push_back(&e);
        } else {
            // Acks usually settle the oldest delivery: try the front before searching.
            auto it = !ch.unacked.empty() && ch.unacked.front().tag == tag
                          ? ch.unacked.begin()
                          : std::lower_bound(
                                ch.unacked.begin(), ch.unacked.end(), tag,
                                [](const unacked_entry& e, std::uint64_t t) { return e.tag < t; });
            if (it == ch.unacked.end() || it->tag != tag || it->settled)
                return channel_error(ch, errc::precondition_failed,
                                     "unknown delivery tag " + std::to_string(tag));
            if (multiple) {
                for (auto i = ch.unacked.begin(); i != it; ++i)
                    if (!i->settled)
                        picked.push_back(&*i);
            }
            picked.push_back(&*it);
        }
        auto& touched = touched_scratch_;
        touched.clear();
        for (auto* e : picked) {
            release(ch, *e);
            auto& q = *e->queue;
            if (q.deleted)
                continue; // counted when the queue went away
            if (ack)
                ++counters_.acked;
            else if (requeue)
                requeue_one(q, std::move(e->m), how);
            else
                dead_letter(q, std::move(e->m), dead_letter_reason::rejected);
            if (std::find(touched.begin(), touched.end(), &q) == touched.end())
                touched.push_back(&q);
        }
        compact(ch);
        // A channel-wide (global) prefetch freed by this settlement may let the channel's other
        // consumers take messages from other queues; otherwise only the touched queues can
        // deliver more. Each queue is visited once.
        if (ch.global_prefetch != 0)
            for (auto& [t, c] : ch.consumers)
                if (auto cq = c->queue.lock();
                    cq && std::find(touched.begin(), touched.end(), cq.get()) == touched.end())
                    touched.push_back(cq.get());
        for (auto* q : touched)
            after_change(*q, false);
        return {};
    }

    std::error_code basic_recover(channel_state& ch, bool requeue) {
        if (auto ec = check_open(ch))
            return ec;
        if (!requeue) // 540, a hard error: the whole connection closes
            return connection_error(ch, errc::not_implemented, "requeue=false");
        scope s(*this);
        requeue_all(ch, return_kind::recover);
        dispatch_channel(ch);
        return {};
    }

    // ---- observation -------------------------------------------------------------------

    std::optional<queue_info> info(std::string_view name) const {
        auto it = queues_.find(name);
        if (it == queues_.end())
            return std::nullopt;
        const auto& q = *it->second;
        return queue_info{q.name,      q.args.type,        q.durable,
                          q.exclusive, q.auto_delete,      q.ready_count(),
                          q.unacked,   q.consumers.size(), q.ready_bytes};
    }

    std::vector<std::string> queue_names() const {
        std::vector<std::string> out;
        for (const auto& [name, q] : queues_)
            out.push_back(name);
        std::sort(out.begin(), out.end());
        return out;
    }

    bool has_exchange(std::string_view name) const {
        return exchanges_.find(name) != exchanges_.end();
    }

    std::vector<topology::binding> bindings_of(std::string_view exchange) const {
        auto it = exchanges_.find(exchange);
        return it == exchanges_.end() ? std::vector<topology::binding>{} : it->second.bindings;
    }

    /// Totals over every queue: (ready, unacked).
    std::pair<std::size_t, std::size_t> totals() const {
        std::size_t r = 0, u = 0;
        for (const auto& [name, q] : queues_) {
            r += q->ready_count();
            u += q->unacked;
        }
        return {r, u};
    }

    std::size_t open_connections() const noexcept { return connections_.size(); }

    std::size_t open_channels() const noexcept {
        std::size_t n = 0;
        for (const auto& c : connections_)
            for (const auto& ch : c->channels)
                n += ch->open ? 1 : 0;
        return n;
    }

    // ---- faults ------------------------------------------------------------------------

    void nack_nth_publish(std::uint64_t n) { nack_publish_at_ = n == 0 ? 0 : publishes_ + n; }
    void lose_nth_confirm(std::uint64_t n) { lose_confirm_at_ = n == 0 ? 0 : publishes_ + n; }

    void sever_all() {
        scope s(*this);
        auto conns = connections_;
        for (auto& c : conns)
            close_connection(*c, {make_error_code(errc::connection_forced),
                                  "CONNECTION_FORCED - connection severed (fault injection)"});
    }

    // A network outage: every connection is lost (their unacknowledged deliveries requeued,
    // as the broker does when it notices a dead connection) and new ones are refused until
    // come_back. Unlike restart, every queue, message and binding stays, and TTL timers keep
    // running: the broker is alive, only unreachable.
    void go_down() {
        scope s(*this);
        down_ = true;
        auto conns = connections_;
        for (auto& c : conns)
            close_connection(*c, {make_error_code(errc::connection_forced),
                                  "CONNECTION_FORCED - broker unreachable (fault injection)"});
    }

    // Ends the outage; returns the waiters registered with when_up, for the caller to run.
    std::vector<letterbox::detail::unique_function<void()>> come_back() {
        down_ = false;
        return std::exchange(up_waiters_, {});
    }

    bool is_down() const noexcept { return down_; }
    std::uint64_t refused_connections() const noexcept { return refused_connections_; }

    // Keeps `f` until come_back (the caller checked that the broker is down).
    void when_up(letterbox::detail::unique_function<void()> f) {
        up_waiters_.push_back(std::move(f));
    }

    void restart() {
        scope s(*this);
        auto conns = connections_;
        for (auto& c : conns)
            close_connection(
                *c,
                {make_error_code(errc::connection_forced),
                 "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"});
        std::vector<std::string> lost;
        for (auto& [name, q] : queues_) {
            if (!q->durable) {
                lost.push_back(name);
                continue;
            }
            if (q->quorum())
                continue; // quorum queues keep every message
            for (auto* list : {&q->ready, &q->returns}) {
                auto keep = std::stable_partition(list->begin(), list->end(), [](const queued& m) {
                    return m.env->msg.properties.persistent;
                });
                for (auto i = keep; i != list->end(); ++i) {
                    q->ready_bytes -= i->bytes();
                    ++counters_.dropped[static_cast<std::size_t>(drop_kind::broker_restart)];
                }
                list->erase(keep, list->end());
            }
            schedule(*q);
        }
        for (auto& name : lost)
            delete_queue(*queues_.at(name), drop_kind::broker_restart);
        std::vector<std::string> transient;
        for (auto& [name, x] : exchanges_)
            if (!x.builtin && !x.decl.durable)
                transient.push_back(name);
        for (auto& name : transient)
            remove_exchange(name);
    }

private:
    // ---- helpers: errors ---------------------------------------------------------------

    std::error_code check_open(channel_state& ch) const {
        if (ch.open)
            return {};
        return ch.connection_closed ? make_error_code(errc::connection_closed)
                                    : make_error_code(errc::channel_closed);
    }

    std::error_code channel_error(channel_state& ch, errc e, const std::string& text) {
        close_channel(ch, {make_error_code(e), reply_text(amqp_reply_name(e), text)});
        return make_error_code(e);
    }

    // A hard error (540 NOT_IMPLEMENTED...): RabbitMQ answers with connection.close, so every
    // channel of the connection closes with the same reason.
    std::error_code connection_error(channel_state& ch, errc e, const std::string& text) {
        close_connection(*ch.connection,
                         {make_error_code(e), reply_text(amqp_reply_name(e), text)});
        return make_error_code(e);
    }

    std::error_code inequivalent(channel_state& ch, const std::string& arg, const char* kind,
                                 const std::string& name, const std::string& received,
                                 const std::string& current) {
        return channel_error(ch, errc::precondition_failed,
                             "inequivalent arg '" + arg + "' for " + kind + " '" + name +
                                 "' in vhost '/': received " + received + " but current is " +
                                 current);
    }

    static std::string bool_text(bool b) { return b ? "'true'" : "'false'"; }

    static std::string_view amqp_type_name(const field_value& v) {
        constexpr std::string_view names[] = {
            "void",      "bool",        "byte",   "unsignedbyte", "short",  "unsignedshort",
            "signedint", "unsignedint", "long",   "float",        "double", "decimal",
            "longstr",   "timestamp",   "binary", "array",        "table"};
        return names[v.variant().index()];
    }

    std::error_code check_exclusive(channel_state& ch, const queue_state& q,
                                    bool flag_differs = false) {
        if (flag_differs || (q.exclusive && q.owner != ch.connection->id))
            return channel_error(ch, errc::resource_locked,
                                 "cannot obtain exclusive access to locked queue '" + q.name +
                                     "' in vhost '/'. It could be originally declared on another "
                                     "connection or the exclusive property value does not match "
                                     "that of the original declaration.");
        return {};
    }

    queue_state* find_queue(channel_state& ch, std::string_view name, std::error_code& ec) {
        auto it = queues_.find(name);
        if (it == queues_.end()) {
            ec = channel_error(ch, errc::not_found,
                               "no queue '" + std::string(name) + "' in vhost '/'");
            return nullptr;
        }
        return it->second.get();
    }

    static std::shared_ptr<channel_state> shared_channel(channel_state& ch) {
        return ch.self.lock();
    }

    // RabbitMQ parses the expiration with string:to_integer and refuses leftovers and negatives.
    static std::int64_t parse_expiration(std::string_view s, std::string& why) {
        std::size_t i = 0;
        bool negative = false;
        if (i < s.size() && (s[i] == '-' || s[i] == '+'))
            negative = s[i++] == '-';
        const auto digits_begin = i;
        std::int64_t v = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9' && v < (std::int64_t{1} << 50))
            v = v * 10 + (s[i++] - '0');
        if (i == digits_begin) {
            why = "no_integer";
            return -1;
        }
        if (i != s.size()) {
            why = "{leftover_string,\"" + std::string(s.substr(i)) + "\"}";
            return -1;
        }
        if (negative && v != 0) {
            why = "{value_negative,-" + std::to_string(v) + "}";
            return -1;
        }
        return v;
    }

    // ---- helpers: routing --------------------------------------------------------------

    // RMQ-RT-10, rabbit_exchange_type_headers:validate_binding: `x-match` must be a longstr
    // naming one of the four modes (3.10 has all-with-x and any-with-x, §0.3 fact 12), else the
    // binding is refused with 406. The texts follow RabbitMQ's format strings (not yet checked
    // against a 3.10.8 broker).
    static std::string invalid_x_match(const field_table& args) {
        const auto* v = args.find("x-match");
        if (!v)
            return {};
        const auto* mode = v->get_if<std::string>();
        if (!mode)
            return "Invalid x-match field type " + std::string(amqp_type_name(*v)) +
                   "; expected longstr";
        if (*mode == "all" || *mode == "any" || *mode == "all-with-x" || *mode == "any-with-x")
            return {};
        return "Invalid x-match field value <<\"" + *mode +
               "\">>; expected all, any, all-with-x, or any-with-x";
    }

    // RabbitMQ compares a binding value with a header value as Erlang terms (`==`): numbers by
    // value whatever their AMQP types (int 7 matches long 7, unsigned byte 7, double 7.0 and
    // the timestamp 7, which is an integer too; float 2.5 matches double 2.5), everything else
    // only an equal value of the same type (a decimal is no number here, string "7" is not 7).
    // Seen on 3.10.8 (tests/integration/amqp_differential.cpp).
    static std::optional<std::int64_t> as_erlang_integer(const field_value& v) {
        if (const auto* t = v.get_if<timestamp>())
            return static_cast<std::int64_t>(t->time_since_epoch().count());
        return v.as_integer();
    }
    static std::optional<double> as_erlang_number(const field_value& v) {
        if (const auto i = as_erlang_integer(v))
            return static_cast<double>(*i);
        if (const auto* f = v.get_if<float>())
            return static_cast<double>(*f);
        if (const auto* d = v.get_if<double>())
            return *d;
        return std::nullopt;
    }
    static bool header_value_matches(const field_value& bound, const field_value& sent) {
        if (const auto a = as_erlang_integer(bound), b = as_erlang_integer(sent); a && b)
            return *a == *b; // exact, also beyond 2^53
        if (const auto a = as_erlang_number(bound), b = as_erlang_number(sent); a && b)
            return *a == *b;
        return bound == sent;
    }

    // Matches against the headers a real broker would see: `msg`'s, without those that
    // to_basic_properties turns into properties (is_wire_header).
    static bool headers_match(const field_table& binding_args, const message& msg) {
        const auto& headers = msg.headers;
        std::string mode = "all";
        if (auto m = binding_args.get<std::string>("x-match"))
            mode = *m;
        const bool with_x = mode == "all-with-x" || mode == "any-with-x";
        const bool all = mode == "all" || mode == "all-with-x";
        bool any_matched = false;
        for (const auto& [key, value] : binding_args) {
            if (key == "x-match" || (!with_x && key.starts_with("x-")))
                continue;
            const auto* h = headers.find(key);
            if (h && key.starts_with("x-letterbox-amqp-") && !is_wire_header(msg, key))
                h = nullptr;
            const bool ok = h && (value.is_void() || header_value_matches(value, *h));
            if (all && !ok)
                return false;
            any_matched |= ok;
        }
        return all || any_matched;
    }

    void route_exchange(const exchange_state& x, std::span<const std::string_view> keys,
                        const message& msg, std::vector<queue_state*>& out,
                        std::vector<const exchange_state*>& seen) {
        if (!seen.empty() && std::find(seen.begin(), seen.end(), &x) != seen.end())
            return;
        auto add_queue = [&](std::string_view name) {
            auto it = queues_.find(name);
            if (it == queues_.end() || it->second->deleted)
                return;
            auto* q = it->second.get();
            if (std::find(out.begin(), out.end(), q) == out.end())
                out.push_back(q);
        };
        if (x.decl.name.empty()) {
            for (auto k : keys)
                add_queue(k);
            return;
        }
        bool routed = false; // any binding matched, whether or not it led to a queue
        for (const auto& b : x.bindings) {
            bool hit = false;
            switch (x.decl.type) {
            case topology::exchange_type::fanout:
                hit = true;
                break;
            case topology::exchange_type::direct:
                hit = std::find(keys.begin(), keys.end(), std::string_view(b.routing_key)) !=
                      keys.end();
                break;
            case topology::exchange_type::topic:
                hit = std::any_of(keys.begin(), keys.end(), [&](std::string_view k) {
                    return topology::topic_matches(b.routing_key, k);
                });
                break;
            case topology::exchange_type::headers:
                hit = headers_match(b.arguments, msg);
                break;
            }
            if (!hit)
                continue;
            routed = true;
            if (b.kind == topology::destination_kind::queue) {
                add_queue(b.destination);
            } else if (auto it = exchanges_.find(b.destination); it != exchanges_.end()) {
                seen.push_back(&x); // only exchange-to-exchange routing needs cycle protection
                route_exchange(it->second, keys, msg, out, seen);
            }
        }
        // rabbit_exchange:route1 (process_alternate): an exchange whose bindings matched
        // nothing hands the message to its alternate exchange, if that exists. Each exchange is
        // walked at most once, so alternate exchanges that point at each other end.
        if (!routed && x.alternate)
            if (auto it = exchanges_.find(*x.alternate); it != exchanges_.end()) {
                seen.push_back(&x);
                route_exchange(it->second, keys, msg, out, seen);
            }
    }

    // Routes with the publish key plus the CC and BCC keys (sender-selected distribution).
    // `x`, when given, is the exchange the caller already looked up for `env->msg.exchange`.
    void route(const std::shared_ptr<const envelope>& env, std::vector<queue_state*>& out,
               const std::string* explicit_key = nullptr, const exchange_state* x = nullptr) {
        if (!x) {
            auto found = exchanges_.find(env->msg.exchange);
            if (found == exchanges_.end())
                return;
            x = &found->second;
        }
        const auto& exchange = *x;
        auto& seen = seen_scratch_;
        seen.clear();
        if (explicit_key) {
            std::string_view one[1] = {*explicit_key};
            route_exchange(exchange, one, env->msg, out, seen);
        } else if (env->cc.empty() && env->bcc.empty()) {
            std::string_view one[1] = {env->msg.routing_key};
            route_exchange(exchange, one, env->msg, out, seen);
        } else {
            std::vector<std::string_view> keys{env->msg.routing_key};
            keys.insert(keys.end(), env->cc.begin(), env->cc.end());
            keys.insert(keys.end(), env->bcc.begin(), env->bcc.end());
            route_exchange(exchange, keys, env->msg, out, seen);
        }
    }

    // ---- helpers: queue contents -------------------------------------------------------

    std::int64_t deadline_for(const queue_state& q, std::int64_t message_ttl_ms) const {
        std::int64_t ttl = message_ttl_ms;
        if (q.args.message_ttl)
            ttl = ttl < 0 ? q.args.message_ttl->count()
                          : std::min<std::int64_t>(ttl, q.args.message_ttl->count());
        if (ttl < 0)
            return no_expiry;
        return now() + ttl * 1'000'000;
    }

    bool over_limit(const queue_state& q, std::size_t extra_count, std::size_t extra_bytes) const {
        return (q.args.max_length &&
                q.ready_count() + extra_count > static_cast<std::size_t>(*q.args.max_length)) ||
               (q.args.max_length_bytes &&
                q.ready_bytes + extra_bytes > static_cast<std::size_t>(*q.args.max_length_bytes));
    }

    topology::overflow_behaviour overflow_of(const queue_state& q) const {
        auto o = q.args.overflow.value_or(topology::overflow_behaviour::drop_head);
        if (q.quorum() && o == topology::overflow_behaviour::reject_publish_dlx)
            return topology::overflow_behaviour::drop_head; // 3.10.8, observed
        return o;
    }

    // Stores one copy; returns false when overflow refused it (the publisher gets a nack).
    bool enqueue(queue_state& q, std::shared_ptr<const envelope> env, std::int64_t message_ttl_ms) {
        queued m;
        m.env = std::move(env);
        m.seq = ++last_seq_;
        m.expires_at = deadline_for(q, message_ttl_ms);
        m.priority = filed_priority(m.env->msg, q.max_priority);
        const auto mode = overflow_of(q);
        if (mode != topology::overflow_behaviour::drop_head) {
            // Quorum queues check the limit before the publish and may overshoot by one.
            const bool full = q.quorum() ? over_limit(q, 0, 0) : over_limit(q, 1, m.bytes());
            if (full) {
                if (mode == topology::overflow_behaviour::reject_publish_dlx) {
                    ++counters_.enqueued;
                    dead_letter(q, std::move(m), dead_letter_reason::maxlen);
                } else {
                    ++counters_.refused;
                }
                return false;
            }
        }
        ++counters_.enqueued;
        q.ready_bytes += m.bytes();
        if (q.max_priority) {
            const auto pos = ready_position(q.ready, m.priority, m.seq);
            q.ready.insert(pos, std::move(m));
        } else {
            q.ready.push_back(std::move(m));
        }
        if (mode == topology::overflow_behaviour::drop_head)
            drop_head_while_over(q);
        return true;
    }

    void drop_head_while_over(queue_state& q) {
        while (q.ready_count() > 0 && over_limit(q, 0, 0))
            dead_letter(q, q.pop_head(), dead_letter_reason::maxlen);
    }

    // Expired messages leave only from the head of the queue (RMQ-TTL-04).
    void expire_heads(queue_state& q, std::int64_t t) {
        while (auto* h = q.head()) {
            if (h->expires_at > t)
                break;
            dead_letter(q, q.pop_head(), dead_letter_reason::expired);
        }
    }

    void schedule(queue_state& q) {
        const auto* h = q.head();
        const auto deadline = h ? h->expires_at : no_expiry;
        if (deadline == q.timer_deadline || q.deleted)
            return;
        q.timer_deadline = deadline;
        if (deadline == no_expiry) {
            q.timer->cancel();
            return;
        }
        std::weak_ptr<broker_state> self = weak_from_this();
        std::weak_ptr<queue_state> wq = queues_.at(q.name);
        q.timer->wait_until(deadline, [self, wq] {
            auto b = self.lock();
            auto qs = wq.lock();
            if (!b || !qs || qs->deleted)
                return;
            scope s(*b);
            qs->timer_deadline = no_expiry;
            b->after_change(*qs, false);
        });
    }

    // x-expires (RMQ-TTL-08): a queue is deleted once it has been unused for the period, its
    // messages dropped without dead-lettering. Unused means no consumer and no basic.get or
    // queue.declare (passive too); each of those, and the last consumer leaving, starts the
    // period again (rabbit_amqqueue_process:ensure_expiry_timer). A timer that fires while the
    // queue has consumers does nothing: the last one to leave starts a new period.
    void touch(queue_state& q) {
        if (!q.args.expires || q.deleted)
            return;
        q.unused_until = now() + static_cast<std::int64_t>(q.args.expires->count()) * 1'000'000;
        if (!q.expiry_timer)
            q.expiry_timer = clock_->make_timer();
        std::weak_ptr<broker_state> self = weak_from_this();
        std::weak_ptr<queue_state> wq = q.self;
        q.expiry_timer->wait_until(q.unused_until, [self, wq] {
            auto b = self.lock();
            auto qs = wq.lock();
            if (!b || !qs || qs->deleted || !qs->consumers.empty() || b->now() < qs->unused_until)
                return;
            scope s(*b);
            b->delete_queue(*qs, drop_kind::queue_expired);
        });
    }

    // After anything that changes a queue: deliver what can be delivered, expire the head,
    // re-arm the expiry timer. A just-published message with TTL 0 may still reach a waiting
    // consumer (RMQ-TTL-06), so delivery runs before the inclusive expiry check.
    void after_change(queue_state& q, bool fresh_publish) {
        if (q.deleted)
            return;
        lazy_now t{*this};
        dispatch(q, fresh_publish, t);
        if (const auto* h = q.head(); h && h->expires_at != no_expiry)
            expire_heads(q, t());
        schedule(q);
    }

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

    void dispatch_channel(channel_state& ch) {
        auto& qs = channel_queues_scratch_; // never re-entered: after_change runs no callback
        qs.clear();
        for (auto& [tag, c] : ch.consumers)
            if (auto q = c->queue.lock())
                qs.push_back(std::move(q));
        for (auto& q : qs)
            after_change(*q, false);
        qs.clear();
    }

    static bool has_capacity(const consumer_state& c) {
        const auto& ch = *c.channel;
        if (!c.active || !ch.open)
            return false;
        if (c.no_ack)
            return true;
        return (c.prefetch == 0 || c.outstanding < c.prefetch) &&
               (ch.global_prefetch == 0 || ch.global_outstanding < ch.global_prefetch);
    }

    // Round-robin over consumers with spare prefetch (RMQ-ACK-20).
    // A just-published message counts as expired only strictly after its deadline.
    void dispatch(queue_state& q, bool fresh_publish, lazy_now& t) {
        std::shared_ptr<queue_state> self; // looked up on the first hand-out only
        while (q.ready_count() > 0 && !q.consumers.empty()) {
            if (q.head()->expires_at != no_expiry)
                expire_heads(q, fresh_publish ? t() - 1 : t());
            if (q.ready_count() == 0)
                break;
            const auto n = q.consumers.size();
            std::shared_ptr<consumer_state> chosen;
            for (std::size_t i = 0; i < n; ++i) {
                auto& c = q.consumers[(q.next_consumer + i) % n];
                if (has_capacity(*c)) {
                    chosen = c;
                    q.next_consumer = (q.next_consumer + i + 1) % n;
                    break;
                }
            }
            if (!chosen)
                break;
            auto& ch = *chosen->channel;
            const bool no_ack = chosen->no_ack;
            if (!self)
                self = q.self.lock();
            auto d = hand_out(ch, self, chosen, q.pop_head(), no_ack, false);
            events_.push_back(ev_deliver{&ch, std::move(chosen), std::move(d)});
        }
    }

    basic_delivery hand_out(channel_state& ch, const std::shared_ptr<queue_state>& q,
                            std::shared_ptr<consumer_state> c, queued m, bool no_ack, bool by_get) {
        ++m.acquired;
        basic_delivery d;
        d.delivery_tag = ch.next_tag++;
        d.redelivered = m.redelivered;
        d.queue = q->name;
        d.channel = ch.id;
        if (c)
            d.consumer_tag = c->tag;
        const bool count_header = q->quorum() && (by_get || m.delivery_count > 0);
        if (count_header || (q->quorum() && profile_.acquired_count_header)) {
            auto copy = std::make_shared<message>(m.env->msg);
            if (count_header)
                copy->headers.set(headers::x_delivery_count, std::int64_t{m.delivery_count});
            if (profile_.acquired_count_header)
                copy->headers.set(headers::x_acquired_count, std::int64_t{m.acquired - 1});
            d.msg = std::move(copy);
        } else {
            d.msg = std::shared_ptr<const message>(m.env, &m.env->msg);
        }
        ++counters_.delivered;
        counters_.redelivered += m.redelivered ? 1 : 0;
        if (no_ack) {
            ++counters_.acked;
            return d;
        }
        ++q->unacked;
        ++ch.live_unacked;
        if (c) {
            ++c->outstanding;
            ++ch.global_outstanding;
        }
        ch.unacked.push_back(unacked_entry{d.delivery_tag, q, std::move(m), std::move(c), false});
        return d;
    }

    void release(channel_state& ch, unacked_entry& e) {
        e.settled = true;
        --ch.live_unacked;
        if (!e.queue->deleted)
            --e.queue->unacked;
        if (e.consumer) {
            --e.consumer->outstanding;
            --ch.global_outstanding;
        }
    }

    static void compact(channel_state& ch) {
        while (!ch.unacked.empty() && ch.unacked.front().settled)
            ch.unacked.pop_front();
    }

    void requeue_all(channel_state& ch, return_kind how) {
        // Grouped per queue, each group in its original (enqueue) order.
        std::vector<std::pair<std::shared_ptr<queue_state>, std::vector<queued>>> groups;
        for (auto& e : ch.unacked) {
            if (e.settled)
                continue;
            release(ch, e);
            if (e.queue->deleted)
                continue;
            auto g = std::find_if(groups.begin(), groups.end(),
                                  [&](auto& p) { return p.first == e.queue; });
            if (g == groups.end()) {
                groups.emplace_back(e.queue, std::vector<queued>{});
                g = std::prev(groups.end());
            }
            g->second.push_back(std::move(e.m));
        }
        compact(ch);
        for (auto& [q, ms] : groups) {
            std::sort(ms.begin(), ms.end(),
                      [](const queued& a, const queued& b) { return a.seq < b.seq; });
            // In original order: the delivery limit is checked front to back, so the ones past
            // it are dead-lettered in original order too (DLX-44).
            for (auto& m : ms)
                requeue_one(*q, std::move(m), how);
            after_change(*q, false);
        }
    }

    void requeue_one(queue_state& q, queued m, return_kind how) {
        if (count_return(q, m, how))
            place_returned(q, std::move(m), how);
    }

    // Marks a returned message redelivered and counts the return. A quorum queue's delivery
    // count may pass its limit: then the message is dead-lettered instead and this is false.
    bool count_return(queue_state& q, queued& m, return_kind how) {
        m.redelivered = true;
        ++counters_.requeued;
        if (q.quorum()) {
            if (how != return_kind::nack || profile_.nack_increments_delivery_count)
                ++m.delivery_count;
            if (q.delivery_limit && m.delivery_count > *q.delivery_limit) {
                dead_letter(q, std::move(m), dead_letter_reason::delivery_limit);
                return false;
            }
        }
        return true;
    }

    void place_returned(queue_state& q, queued m, return_kind how) {
        q.ready_bytes += m.bytes();
        if (q.quorum()) {
            // rabbit_fifo serves its returns before the other ready messages, in return order.
            // 3.10 and 3.13 send a nack, reject or recover requeue to the back instead when the
            // queue has no delivery limit; a closed channel's messages are returns everywhere
            // (§0.3 1, RMQ-ACK-23).
            const bool first = profile_.quorum_returns_first ||
                               how == return_kind::channel_closed || q.delivery_limit.has_value();
            (first ? q.returns : q.ready).push_back(std::move(m));
        } else {
            const auto pos = ready_position(q.ready, m.priority, m.seq);
            q.ready.insert(pos, std::move(m));
        }
        if (overflow_of(q) == topology::overflow_behaviour::drop_head)
            drop_head_while_over(q); // 3.10.8: requeues into a full drop-head queue drop the head
    }

    // ---- helpers: dead-lettering -------------------------------------------------------

    struct pending_dead_letter {
        std::shared_ptr<queue_state> queue;
        queued m;
        dead_letter_reason reason;
    };

    // Dead letters are processed in FIFO order after the operation that caused them, so a
    // chain of dead-letterings never recurses and keeps its order (DLX-07, DLX-42..45).
    void dead_letter(queue_state& q, queued m, dead_letter_reason r) {
        const auto ri = static_cast<std::size_t>(r);
        if (!q.args.dead_letter_exchange) {
            ++counters_.discarded[ri];
            return;
        }
        if (exchanges_.find(*q.args.dead_letter_exchange) == exchanges_.end()) {
            // DLX-14: a missing dead-letter exchange drops the message, and RabbitMQ counts it
            // under the `disabled` strategy (as if the queue had no DLX), not as dead-lettered.
            ++counters_.discarded[ri];
            ++counters_.dead_letters_dropped[static_cast<std::size_t>(
                dead_letter_drop::exchange_missing)];
            return;
        }
        ++counters_.dead_lettered[ri];
        pending_dead_letters_.push_back({queues_.at(q.name), std::move(m), r});
    }

    void process_dead_letters() {
        while (!pending_dead_letters_.empty()) {
            auto p = std::move(pending_dead_letters_.front());
            pending_dead_letters_.pop_front();
            republish_dead_letter(*p.queue, std::move(p.m), p.reason);
        }
    }

    field_table make_death_entry(const queue_state& q, const envelope& env,
                                 dead_letter_reason r) const {
        field_array keys{field_value(env.msg.routing_key)};
        for (const auto& k : env.cc)
            keys.emplace_back(k);
        // Fields in the sorted order RabbitMQ writes them.
        field_table t;
        t.set(headers::x_death_field::count, std::int64_t{1});
        t.set(headers::x_death_field::exchange, env.msg.exchange);
        if (env.msg.properties.expiration)
            t.set(headers::x_death_field::original_expiration, *env.msg.properties.expiration);
        t.set(headers::x_death_field::queue, q.name);
        t.set(headers::x_death_field::reason, std::string(to_string(r)));
        t.set(headers::x_death_field::routing_keys, std::move(keys));
        t.set(headers::x_death_field::time,
              std::chrono::time_point_cast<std::chrono::seconds>(clock_->wall_now()));
        return t;
    }

    void update_history(message& msg, const queue_state& q, const envelope& env,
                        dead_letter_reason r) const {
        field_array deaths;
        // 3.10 (update_x_death_header): the x-first-death-* headers are written only by the
        // event that creates x-death; when an x-death is already there (even a client's), they
        // are left as they are, absent or not (§0.3 fact 5).
        const bool had_history = env.history_is_ours && msg.headers.contains(headers::x_death);
        if (env.history_is_ours)
            if (const auto* v = msg.headers.find(headers::x_death))
                if (const auto* arr = v->get_if<field_array>())
                    deaths = *arr;
        const auto reason = std::string(to_string(r));
        auto same = std::find_if(deaths.begin(), deaths.end(), [&](const field_value& v) {
            const auto* t = v.get_if<field_table>();
            return t && t->get<std::string>(headers::x_death_field::queue) == q.name &&
                   t->get<std::string>(headers::x_death_field::reason) == reason;
        });
        field_value entry;
        if (same != deaths.end()) {
            // Keyed by (queue, reason): count grows; exchange, routing keys and time keep
            // their first values (§0.3 fact 6).
            entry = std::move(*same);
            deaths.erase(same);
            auto& t = *entry.get_if<field_table>();
            const auto n = t.find(headers::x_death_field::count)
                               ? t.find(headers::x_death_field::count)->as_integer()
                               : std::optional<std::int64_t>{};
            t.set(headers::x_death_field::count, std::int64_t{n.value_or(0) + 1});
        } else {
            entry = make_death_entry(q, env, r);
        }
        if (profile_.reverse_x_death_on_event)
            std::reverse(deaths.begin(), deaths.end()); // 3.10.8, observed (§0.3 fact 6)
        deaths.insert(deaths.begin(), std::move(entry));
        msg.headers.set(headers::x_death, std::move(deaths));
        if (!had_history) {
            msg.headers.set(headers::x_first_death_reason, reason);
            msg.headers.set(headers::x_first_death_queue, q.name);
            msg.headers.set(headers::x_first_death_exchange, env.msg.exchange);
        }
        if (profile_.x_last_death_headers) {
            msg.headers.set(headers::x_last_death_reason, reason);
            msg.headers.set(headers::x_last_death_queue, q.name);
            msg.headers.set(headers::x_last_death_exchange, env.msg.exchange);
        }
    }

    // A dead letter that would reach a queue it already died in, with no rejection in the
    // history up to that queue's entry, is dropped (RabbitMQ's is_cycle; DLX-18/19/20).
    static bool is_cycle(const std::string& target, const field_array& deaths) {
        for (const auto& v : deaths) {
            const auto* t = v.get_if<field_table>();
            if (!t)
                return false; // something a client put there: not a fully automatic cycle
            if (t->get<std::string>(headers::x_death_field::reason) == std::string("rejected"))
                return false;
            if (t->get<std::string>(headers::x_death_field::queue) == target)
                return true;
        }
        return false;
    }

    void republish_dead_letter(queue_state& q, queued m, dead_letter_reason r) {
        const auto& dlx = *q.args.dead_letter_exchange;
        const auto& old = *m.env;
        auto env = std::make_shared<envelope>();
        env->msg = old.msg;
        update_history(env->msg, q, old, r);
        env->msg.properties.expiration.reset();
        env->msg.exchange = dlx;
        const std::string* explicit_key = nullptr;
        if (q.args.dead_letter_routing_key) {
            env->msg.routing_key = *q.args.dead_letter_routing_key;
            explicit_key = &env->msg.routing_key;
            if (!profile_.keep_cc_with_dead_letter_routing_key)
                env->msg.headers.erase(headers::cc);
        } else {
            env->cc = old.cc;
            env->bcc = old.bcc;
        }
        if (!profile_.keep_cc_with_dead_letter_routing_key && explicit_key)
            env->cc.clear();
        if (exchanges_.find(dlx) == exchanges_.end()) {
            ++counters_.dead_letters_dropped[static_cast<std::size_t>(
                dead_letter_drop::exchange_missing)];
            return;
        }
        std::vector<queue_state*> targets;
        route(env, targets, explicit_key);
        if (targets.empty()) {
            ++counters_
                  .dead_letters_dropped[static_cast<std::size_t>(dead_letter_drop::unroutable)];
            return;
        }
        if (r != dead_letter_reason::rejected) {
            const auto& deaths = *env->msg.headers.find(headers::x_death)->get_if<field_array>();
            std::erase_if(targets, [&](queue_state* t) { return is_cycle(t->name, deaths); });
            if (targets.empty()) {
                ++counters_.dead_letters_dropped[static_cast<std::size_t>(dead_letter_drop::cycle)];
                return;
            }
        }
        bool stored = false;
        for (auto* t : targets)
            stored |= enqueue(*t, env, -1);
        if (!stored)
            ++counters_.dead_letters_dropped[static_cast<std::size_t>(dead_letter_drop::refused)];
        // A dead letter arrives like a publish (deliver_or_enqueue): a waiting consumer gets it
        // before its expiry is checked, so TTL 0 does not expire it on arrival (RMQ-TTL-06).
        for (auto* t : targets)
            after_change(*t, true);
    }

    // ---- helpers: topology changes -----------------------------------------------------

    void remove_consumer(consumer_state& c) {
        c.active = false;
        auto q = c.queue.lock();
        if (!q)
            return;
        auto it = std::find_if(q->consumers.begin(), q->consumers.end(),
                               [&](auto& p) { return p.get() == &c; });
        if (it == q->consumers.end())
            return;
        q->consumers.erase(it);
        if (q->next_consumer >= q->consumers.size())
            q->next_consumer = 0;
        if (q->auto_delete && q->consumers.empty() && !q->deleted)
            delete_queue(*q, drop_kind::queue_deleted);
        else if (q->consumers.empty())
            touch(*q); // unused from now on: x-expires counts from here
    }

    void delete_queue(queue_state& q, drop_kind why) {
        if (q.deleted)
            return;
        auto keep = queues_.at(q.name);
        q.deleted = true;
        counters_.dropped[static_cast<std::size_t>(why)] += q.ready_count() + q.unacked;
        q.ready.clear();
        q.returns.clear();
        q.ready_bytes = 0;
        q.unacked = 0;
        q.timer->cancel();
        if (q.expiry_timer)
            q.expiry_timer->cancel();
        auto consumers = std::move(q.consumers);
        q.consumers.clear();
        for (auto& c : consumers) {
            c->active = false;
            auto& ch = *c->channel;
            if (ch.open) {
                ch.consumers.erase(c->tag);
                events_.push_back(ev_cancel{shared_channel(ch), c}); // consumer_cancel_notify
            }
        }
        for (auto& [name, x] : exchanges_)
            std::erase_if(x.bindings, [&](const topology::binding& b) {
                return b.kind == topology::destination_kind::queue && b.destination == q.name;
            });
        queues_.erase(q.name);
    }

    void remove_exchange(const std::string& name) {
        exchanges_.erase(name);
        for (auto& [n, x] : exchanges_)
            std::erase_if(x.bindings, [&](const topology::binding& b) {
                return b.kind == topology::destination_kind::exchange && b.destination == name;
            });
    }

    // ---- events ------------------------------------------------------------------------

    // Runs what the outermost operation left behind: dead letters first (they may cause more
    // events), then each callback. A callback that calls the broker opens a nested scope, whose
    // leftovers this loop picks up.
    void flush() {
        ++depth_;
        struct restore {
            broker_state& b;
            ~restore() { --b.depth_; }
        } r{*this};
        for (;;) {
            process_dead_letters();
            if (event_head_ == events_.size()) {
                events_.clear(); // keeps the capacity: no allocation per event in steady state
                event_head_ = 0;
                break;
            }
            auto e = std::move(events_[event_head_++]);
            std::visit([this](auto& ev) { deliver_event(ev); }, e);
        }
    }

    void deliver_event(ev_deliver& e) {
        if (e.ch->open && e.consumer->on_delivery)
            e.consumer->on_delivery(e.d);
    }
    void deliver_event(ev_confirm& e) {
        if (e.ch->open && e.ch->on_confirm)
            e.ch->on_confirm(e.seq, e.ack, false);
    }
    void deliver_event(ev_return& e) {
        if (e.ch->open && e.ch->on_return)
            e.ch->on_return(e.r);
    }
    void deliver_event(ev_cancel& e) {
        if (e.ch->open && e.consumer->on_cancel)
            e.consumer->on_cancel(e.consumer->tag);
    }
    void deliver_event(ev_channel_closed& e) {
        if (e.ch->on_close)
            e.ch->on_close(e.ch->reason);
    }
    void deliver_event(ev_connection_closed& e) {
        if (e.conn && e.conn->on_close)
            e.conn->on_close(e.conn->reason);
    }

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
    std::uint64_t last_id_ = 0;
    std::uint64_t last_seq_ = 0;
    std::uint64_t generated_names_ = 0;
    std::uint64_t publishes_ = 0;
    std::uint64_t nack_publish_at_ = 0;
    std::uint64_t lose_confirm_at_ = 0;
    std::uint64_t refused_connections_ = 0;
    std::vector<letterbox::detail::unique_function<void()>> up_waiters_;
    bool down_ = false;
    int depth_ = 0;
};

} // namespace letterbox::in_memory::detail
