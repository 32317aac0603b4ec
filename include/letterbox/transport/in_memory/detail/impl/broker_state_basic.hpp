// SPDX-License-Identifier: BSL-1.0
#pragma once

// The basic class: qos, confirms, publish, consume, cancel, get, acknowledgements and recover.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL
broker_state::broker_state(std::unique_ptr<clock_adapter> clock, const broker_profile& profile,
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

LETTERBOX_DECL broker_state::~broker_state() {
    // Timers need the clock, which may die before a channel handle does.
    for (auto& c : connections_)
        for (auto& ch : c->channels)
            ch->ack_timer.reset();
}

LETTERBOX_DECL std::error_code broker_state::basic_qos(channel_state& ch, std::uint16_t prefetch,
                                                       bool global) {
    if (auto ec = check_open(ch))
        return ec;
    scope s(*this);
    if (global && profile_.global_qos_permitted) {
        ch.global_prefetch = prefetch;
    } else {
        ch.consumer_prefetch = prefetch;
        if (profile_.consumer_qos_clears_global_qos)
            ch.global_prefetch = 0;
    }
    dispatch_channel(ch);
    return {};
}

LETTERBOX_DECL std::error_code broker_state::confirm_select(channel_state& ch) {
    if (auto ec = check_open(ch))
        return ec;
    ch.confirm = true;
    return {};
}

LETTERBOX_DECL std::error_code broker_state::basic_publish(channel_state& ch, message&& msg,
                                                           bool mandatory) {
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
                                 "invalid expiration '" + *msg.properties.expiration + "': " + why);
    }
    if (auto ec = set_reply_address(ch, msg))
        return ec;
    std::vector<std::string> cc, bcc;
    for (auto [header, keys] : {std::pair{headers::cc, &cc}, std::pair{headers::bcc, &bcc}}) {
        if (const auto* v = msg.headers.find(header)) {
            const auto* arr = v->get_if<field_array>();
            if (!arr)
                return channel_error(ch, errc::precondition_failed,
                                     "invalid message: {unacceptable_type_in_header,\"" +
                                         std::string(header) + "\"," +
                                         std::string(amqp_type_text(*v)) + "}");
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

    // A reply to a direct reply-to address reaches its channel and is then routed as any
    // publish: no queue is named so, so a mandatory reply is also returned (seen on 3.10.8).
    deliver_reply(env);
    route_scratch_.clear();
    route(env, route_scratch_, nullptr, &xit->second);
    bool refused = false;
    if (route_scratch_.empty()) {
        ++counters_.unroutable;
        if (mandatory) {
            ++counters_.returned;
            events_.push_back(ev_return{
                shared_channel(ch), returned_message{std::shared_ptr<const message>(env, &env->msg),
                                                     312, "NO_ROUTE", seq}});
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

LETTERBOX_DECL std::string broker_state::basic_consume(channel_state& ch, std::string_view queue,
                                                       basic_consume_options opts,
                                                       delivery_callback on_delivery,
                                                       cancel_handler on_cancel,
                                                       std::error_code& ec) {
    ec = check_open(ch);
    if (ec)
        return {};
    scope s(*this);
    if (queue == topology::direct_reply_to)
        return reply_consume(ch, std::move(opts), std::move(on_delivery), std::move(on_cancel), ec);
    auto* q = find_queue(ch, queue, ec);
    if (!q)
        return {};
    if ((ec = check_exclusive(ch, *q)))
        return {};
    // A 3.10 quorum queue ignores the exclusive flag of basic.consume: it takes an exclusive
    // consumer next to others, and others next to it (seen on 3.10.8).
    if (q->quorum())
        opts.exclusive = false;
    const bool taken = std::any_of(q->consumers.begin(), q->consumers.end(),
                                   [](const auto& c) { return c->exclusive; });
    // A classic single-active-consumer queue refuses every exclusive consumer, even the first
    // (rabbit_amqqueue_process: exclusive_consume_unavailable; seen on 3.10.8).
    if (taken || (opts.exclusive && (!q->consumers.empty() || q->single_active_consumer))) {
        ec = channel_error(ch, errc::access_refused,
                           "queue '" + q->name + "' in vhost '/' in exclusive use");
        return {};
    }
    if (q->quorum() && ch.global_prefetch != 0) {
        // 540 is a hard error: RabbitMQ closes the whole connection (§0.3 3).
        ec = connection_error(ch, errc::not_implemented,
                              "queue '" + q->name + "' in vhost '/' does not support global qos");
        return {};
    }
    if (!take_consumer_tag(ch, opts.consumer_tag, ec))
        return {};
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

LETTERBOX_DECL bool broker_state::take_consumer_tag(channel_state& ch, std::string& tag,
                                                    std::error_code& ec) {
    if (tag.empty())
        tag = "amq.ctag-" + std::to_string(ch.id) + "-" + std::to_string(ch.next_consumer_tag++);
    if (ch.consumers.contains(tag)) {
        ec = channel_error(ch, errc::not_allowed, "attempt to reuse consumer tag '" + tag + "'");
        return false;
    }
    return true;
}

LETTERBOX_DECL std::error_code broker_state::basic_cancel(channel_state& ch, std::string_view tag) {
    if (auto ec = check_open(ch))
        return ec;
    scope s(*this);
    auto it = ch.consumers.find(tag);
    if (it == ch.consumers.end())
        return {};
    auto c = it->second;
    ch.consumers.erase(it);
    if (c->tag == ch.reply_tag)
        forget_reply_consumer(ch);
    remove_consumer(*c);
    return {};
}

LETTERBOX_DECL std::optional<basic_delivery> broker_state::basic_get(channel_state& ch,
                                                                     std::string_view queue,
                                                                     bool no_ack,
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
    if (q->quorum() && q->single_active_consumer) {
        // rabbit_fifo answers a dequeue on a single-active-consumer queue with `unsupported`.
        ec = channel_error(ch, errc::resource_locked,
                           "cannot obtain access to locked queue '" + q->name +
                               "' in vhost '/'. basic.get operations are not supported by "
                               "quorum queues with single active consumer");
        return std::nullopt;
    }
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

LETTERBOX_DECL std::error_code broker_state::settle(channel_state& ch, std::uint64_t tag,
                                                    bool multiple, bool ack, bool requeue,
                                                    return_kind how) {
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

LETTERBOX_DECL std::error_code broker_state::basic_recover(channel_state& ch, bool requeue) {
    if (auto ec = check_open(ch))
        return ec;
    if (!requeue) // 540, a hard error: the whole connection closes
        return connection_error(ch, errc::not_implemented, "requeue=false");
    scope s(*this);
    requeue_all(ch, return_kind::recover);
    dispatch_channel(ch);
    return {};
}

} // namespace letterbox::in_memory::detail
