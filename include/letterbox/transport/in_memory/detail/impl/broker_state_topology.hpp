// SPDX-License-Identifier: BSL-1.0
#pragma once

// Exchanges, queues and bindings: their declaration, deletion and removal.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

#include <span>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL std::error_code
broker_state::exchange_declare(channel_state& ch, const topology::exchange& x, bool passive) {
    if (auto ec = check_open(ch))
        return ec;
    scope s(*this);
    auto it = exchanges_.find(x.name);
    if (passive) {
        if (it == exchanges_.end() || x.name == "amq.default")
            return channel_error(ch, errc::not_found, "no exchange '" + x.name + "' in vhost '/'");
        return {};
    }
    if (x.name.empty())
        return channel_error(ch, errc::access_refused,
                             "operation not permitted on the default exchange");
    if (it != exchanges_.end()) {
        const auto& cur = it->second.decl;
        if (cur.type != x.type) {
            // RabbitMQ prints the type atoms with ~p: 'x-consistent-hash' keeps its own quotes
            // inside the text's (seen on 3.10.8).
            auto type_text = [](topology::exchange_type t) {
                const std::string name(topology::to_string(t));
                return t == topology::exchange_type::consistent_hash ? "''" + name + "''"
                                                                     : "'" + name + "'";
            };
            return inequivalent(ch, "type", "exchange", x.name, type_text(x.type),
                                type_text(cur.type));
        }
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
            return inequivalent(ch, std::string(alternate_exchange_argument), "exchange", x.name,
                                equivalence_side(want, both), equivalence_side(have, both));
        }
        return {};
    }
    if (x.name.starts_with("amq."))
        return channel_error(ch, errc::access_refused,
                             "exchange name '" + x.name + "' contains reserved prefix 'amq.*'");
    exchange_state st;
    if (x.type == topology::exchange_type::consistent_hash) {
        // rabbit_exchange:declare runs the type's validate only for a new exchange; a
        // redeclaration compares `alternate-exchange` alone (rabbit_exchange_type_consistent_hash).
        std::error_code ec;
        std::string why;
        auto hash_on = topology::consistent_hash_arguments::parse(x.arguments, ec, why);
        if (!hash_on && ec == errc::precondition_failed)
            return channel_error(ch, errc::precondition_failed, why);
        if (!hash_on) {
            // A value that is no longstr crashes the broker's channel process: the connection
            // closes with 541 and no explanation (seen on 3.10.8).
            close_connection(*ch.connection, {make_error_code(errc::internal_error),
                                              std::string(amqp_reply_name(errc::internal_error))});
            return make_error_code(errc::internal_error);
        }
        st.ring = consistent_hash_ring(std::move(*hash_on));
    }
    st.decl = x;
    st.alternate = alternate_exchange_of(x.arguments);
    exchanges_.emplace(x.name, std::move(st));
    return {};
}

LETTERBOX_DECL std::error_code
broker_state::exchange_delete(channel_state& ch, std::string_view name, bool if_unused) {
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

LETTERBOX_DECL std::error_code broker_state::bind(channel_state& ch, const topology::binding& b,
                                                  bool unbind) {
    if (auto ec = check_open(ch))
        return ec;
    scope s(*this);
    auto src = exchanges_.find(b.source);
    const bool to_queue = b.kind == topology::destination_kind::queue;
    if (b.source.empty() || (!to_queue && b.destination.empty()))
        return channel_error(ch, errc::access_refused,
                             "operation not permitted on the default exchange");
    if (src == exchanges_.end())
        return channel_error(ch, errc::not_found, "no exchange '" + b.source + "' in vhost '/'");
    const queue_state* queue = nullptr;
    if (to_queue) {
        auto q = queues_.find(b.destination);
        if (q == queues_.end())
            return channel_error(ch, errc::not_found,
                                 "no queue '" + b.destination + "' in vhost '/'");
        queue = q->second.get();
    } else if (exchanges_.find(b.destination) == exchanges_.end()) {
        return channel_error(ch, errc::not_found,
                             "no exchange '" + b.destination + "' in vhost '/'");
    }
    // rabbit_binding:add asks the exchange type to validate a new binding before it checks the
    // queue's exclusivity or whether the binding exists already; an unbind validates nothing.
    const bool consistent_hash = src->second.decl.type == topology::exchange_type::consistent_hash;
    std::optional<std::uint64_t> weight;
    if (consistent_hash && !unbind) {
        std::string why;
        weight = binding_weight(b.routing_key, why);
        if (!weight)
            return channel_error(ch, errc::precondition_failed, why);
    }
    if (queue != nullptr)
        if (auto ec = check_exclusive(ch, *queue))
            return ec;
    auto& list = src->second.bindings;
    auto same = std::find(list.begin(), list.end(), b);
    if (unbind) {
        if (same != list.end()) {
            list.erase(same);
            // Any binding's removal takes all the destination's buckets, even while another
            // binding to it stays (rabbit_exchange_type_consistent_hash:remove_binding).
            src->second.ring.remove(b.kind, b.destination);
        }
        return {};
    }
    if (src->second.decl.type == topology::exchange_type::topic && profile_.max_topic_hash_words &&
        topology::topic_hash_words(b.routing_key) > *profile_.max_topic_hash_words)
        return channel_error(ch, errc::precondition_failed,
                             "binding key '" + b.routing_key + "' has too many '#' words");
    if (src->second.decl.type == topology::exchange_type::headers)
        if (auto why = invalid_x_match(b.arguments); !why.empty())
            return channel_error(ch, errc::precondition_failed, std::move(why));
    if (same == list.end()) {
        list.push_back(b);
        if (consistent_hash)
            src->second.ring.add(b, *weight);
    }
    return {};
}

LETTERBOX_DECL queue_declare_ok broker_state::queue_declare(channel_state& ch,
                                                            const topology::queue& decl,
                                                            bool passive, std::error_code& ec) {
    ec = check_open(ch);
    if (ec)
        return {};
    scope s(*this);
    std::string name = decl.name;
    if (name.empty() && !passive)
        name = "amq.gen-" + std::to_string(++generated_names_);
    if (auto reply = declare_reply_queue(ch, name, ec))
        return *reply;
    auto it = queues_.find(name);
    if (passive) {
        if (it == queues_.end()) {
            ec = channel_error(ch, errc::not_found, "no queue '" + name + "' in vhost '/'");
            return {};
        }
        if ((ec = check_exclusive(ch, *it->second)))
            return {};
        touch(*it->second); // a declare, passive too, is a use (x-expires)
        return {name, it->second->ready_count(), it->second->declare_ok_consumers()};
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
        // rabbit_misc:assert_args_equivalence over the queue type's arguments, in their order.
        const std::span<const std::string_view> compared =
            q.quorum() ? std::span<const std::string_view>(compared_quorum_queue_arguments)
                       : std::span<const std::string_view>(compared_queue_arguments);
        for (auto arg : compared) {
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
        return {name, q.ready_count(), q.declare_ok_consumers()};
    }
    auto args = new_queue_arguments(ch, decl, name, ec);
    if (!args)
        return {};
    auto q = std::make_shared<queue_state>();
    q->self = q;
    q->name = name;
    q->durable = decl.durable;
    q->exclusive = decl.exclusive;
    q->auto_delete = decl.auto_delete;
    q->owner = decl.exclusive ? ch.connection->id : 0;
    q->arguments = decl.arguments;
    q->args = *args;
    if (const auto* sac = decl.arguments.find(single_active_consumer_argument))
        q->single_active_consumer = sac->get_if<bool>() && *sac->get_if<bool>();
    if (q->quorum()) {
        // A negative limit is "unlimited" from 4.0 on; 3.10 compares the count with it as
        // it is, so the first return dead-letters (seen on 3.10.8 with -1).
        if (args->delivery_limit)
            q->delivery_limit =
                *args->delivery_limit < 0 && profile_.quorum_negative_delivery_limit_is_unlimited
                    ? std::nullopt
                    : args->delivery_limit;
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

LETTERBOX_DECL std::optional<topology::queue_arguments>
broker_state::new_queue_arguments(channel_state& ch, const topology::queue& decl,
                                  const std::string& name, std::error_code& ec) {
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
    // `x-single-active-consumer` must be a bool, and 3.10.8 reports it after every argument
    // parse() checks, `x-queue-type` included (seen on 3.10.8: a text value with a negative
    // `x-max-length`, or with the queue type 'weird', is refused for the other argument).
    if (const auto* sac = decl.arguments.find(single_active_consumer_argument);
        args && sac && !sac->get_if<bool>()) {
        ec = channel_error(ch, errc::precondition_failed,
                           "invalid arg '" + std::string(single_active_consumer_argument) +
                               "' for queue '" + name + "' in vhost '/': {unacceptable_type," +
                               std::string(amqp_type_text(*sac)) + "}");
        return std::nullopt;
    }
    if (!args) {
        // parse() says "invalid arg 'A': why", or "invalid type 'T' for arg 'A'".
        if (why.starts_with("invalid type"))
            why += " in queue '" + name + "' in vhost '/'";
        else
            why.replace(why.find(':'), 1, " for queue '" + name + "' in vhost '/':");
        ec = channel_error(ch, errc::precondition_failed, why);
        return std::nullopt;
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
        return std::nullopt;
    }
    if (args->type == topology::queue_type::quorum) {
        // rabbit_quorum_queue:declare checks auto-delete, then exclusive, then durable.
        const char* bad = decl.auto_delete ? "auto-delete"
                          : decl.exclusive ? "exclusive-owner"
                          : !decl.durable  ? "non-durable"
                                           : nullptr;
        if (bad) {
            ec = channel_error(ch, errc::precondition_failed,
                               std::string("invalid property '") + bad + "' for queue '" + name +
                                   "' in vhost '/'");
            return std::nullopt;
        }
    }
    return args;
}

LETTERBOX_DECL std::size_t broker_state::queue_purge(channel_state& ch, std::string_view name,
                                                     std::error_code& ec) {
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

LETTERBOX_DECL std::size_t broker_state::queue_delete(channel_state& ch, std::string_view name,
                                                      bool if_unused, bool if_empty,
                                                      std::error_code& ec) {
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

LETTERBOX_DECL void broker_state::remove_consumer(consumer_state& c) {
    c.active = false;
    auto q = c.queue.lock();
    if (!q)
        return;
    auto it = std::find_if(q->consumers.begin(), q->consumers.end(),
                           [&](auto& p) { return p.get() == &c; });
    if (it == q->consumers.end())
        return;
    const bool was_active = q->single_active_consumer && it == q->consumers.begin();
    q->consumers.erase(it);
    if (q->next_consumer >= q->consumers.size())
        q->next_consumer = 0;
    if (q->auto_delete && q->consumers.empty() && !q->deleted)
        delete_queue(*q, drop_kind::queue_deleted);
    else if (q->consumers.empty())
        touch(*q); // unused from now on: x-expires counts from here
    else if (was_active)
        // The next consumer in registration order is active now, and takes what is ready. A
        // cancelled consumer keeps its unacknowledged messages: only a channel close returns
        // them (rabbit_amqqueue_process basic_cancel and handle_ch_down; rabbit_fifo's
        // cancel_consumer and activate_next_consumer).
        after_change(*q, false);
}

LETTERBOX_DECL void broker_state::delete_queue(queue_state& q, drop_kind why) {
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
    for (auto& [name, x] : exchanges_) {
        std::erase_if(x.bindings, [&](const topology::binding& b) {
            return b.kind == topology::destination_kind::queue && b.destination == q.name;
        });
        x.ring.remove(topology::destination_kind::queue, q.name);
    }
    queues_.erase(q.name);
}

LETTERBOX_DECL void broker_state::remove_exchange(const std::string& name) {
    exchanges_.erase(name);
    for (auto& [n, x] : exchanges_) {
        std::erase_if(x.bindings, [&](const topology::binding& b) {
            return b.kind == topology::destination_kind::exchange && b.destination == name;
        });
        x.ring.remove(topology::destination_kind::exchange, name);
    }
}

} // namespace letterbox::in_memory::detail
