// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of transport_state (included by transport_state.hpp).

#include <letterbox/amqp/detail/transport_state.hpp>

#include <algorithm>
#include <string_view>

namespace letterbox::amqp::detail {

// ---- connection and recovery ---------------------------------------------------------------

inline void transport_state::with_connection(completion then) {
    if (closed_)
        return then(make_error_code(errc::closed));
    if (phase_ == phase::open && conn_ && conn_->is_open())
        return then({});
    // It waits for the attempt in progress, or the one the backoff has scheduled (at most
    // reconnect_delay_max away), and completes with its outcome: callers retrying in a loop
    // never make the transport hammer a broker that is down.
    waiters_.push_back(std::move(then));
}

inline void transport_state::connect_now() {
    if (closed_)
        return;
    phase_ = phase::connecting;
    const auto generation = ++generation_;
    conn_ = std::make_shared<connection_core>(strand_, options_.connection_name, generation << 32U);
    std::weak_ptr<transport_state> weak = weak_from_this();
    conn_->on_closed = [weak, generation](std::error_code ec) {
        if (auto self = weak.lock())
            self->on_connection_lost(generation, ec);
    };
    conn_->on_blocked = [weak, generation](bool blocked, const std::string&) {
        if (auto self = weak.lock(); self && !blocked && self->generation_ == generation)
            self->pump();
    };
    conn_->connect(url_, [weak, generation](std::error_code ec) {
        if (auto self = weak.lock())
            self->on_connected(generation, ec);
    });
}

inline void transport_state::on_connected(std::uint64_t generation, std::error_code ec) {
    if (generation != generation_ || closed_)
        return;
    if (ec) {
        fail_waiters(ec.category() == error_category() ? ec
                                                       : make_error_code(errc::connection_closed));
        return schedule_reconnect();
    }
    delay_ = options_.reconnect_delay_min;
    phase_ = phase::recovering;
    recover_topology(0);
}

inline void transport_state::recover_topology(std::size_t next) {
    if (!connection_usable())
        return;
    if (next == declared_.size()) {
        std::vector<std::shared_ptr<subscription>> subs;
        for (auto& [tag, sub] : subscriptions_)
            if (!sub->subscribing)
                subs.push_back(sub);
        return recover_consumers(std::move(subs), 0);
    }
    // A declaration that fails now (changed elsewhere meanwhile) does not stop the recovery.
    const auto generation = generation_;
    declare_now(declared_[next], [self = shared_from_this(), next, generation](std::error_code) {
        if (self->generation_ == generation)
            self->recover_topology(next + 1);
    });
}

inline void transport_state::recover_consumers(std::vector<std::shared_ptr<subscription>> subs,
                                               std::size_t next) {
    if (!connection_usable())
        return;
    if (next == subs.size())
        return opened();
    auto sub = subs[next];
    const auto generation = generation_;
    subscribe_now(sub, [self = shared_from_this(), subs = std::move(subs), next, sub,
                        generation](std::error_code ec) mutable {
        if (self->generation_ != generation)
            return;
        // A consumer whose queue did not survive is dropped, as the broker would cancel it.
        if (ec)
            self->subscriptions_.erase(sub->options.consumer_tag);
        self->recover_consumers(std::move(subs), next + 1);
    });
}

inline void transport_state::opened() {
    phase_ = phase::open;
    connected_.store(true, std::memory_order_release);
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiters)
        w({});
    pump();
}

inline void transport_state::fail_waiters(std::error_code ec) {
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiters)
        w(ec);
}

inline void transport_state::on_connection_lost(std::uint64_t generation, std::error_code ec) {
    if (generation != generation_ || closed_)
        return;
    (void)ec;
    connected_.store(false, std::memory_order_release);
    // Nothing sent and unconfirmed is replayed: the caller decides (outcome_unknown).
    fail_unconfirmed(make_error_code(errc::outcome_unknown));
    fail_outbox(make_error_code(errc::connection_closed));
    fail_waiters(make_error_code(errc::connection_closed));
    for (auto* lc : {admin_.get(), publisher_.get()})
        lc->ch.reset();
    getters_.clear();
    channels_.clear(); // their deliveries are requeued by the broker; settling them fails
    for (auto& [tag, sub] : subscriptions_) {
        sub->ch.reset();
        sub->pending.clear();
    }
    schedule_reconnect();
}

inline void transport_state::schedule_reconnect() {
    if (closed_)
        return;
    phase_ = phase::backoff;
    connected_.store(false, std::memory_order_release);
    timer_.expires_after(delay_);
    delay_ = std::min(delay_ * 2, options_.reconnect_delay_max);
    const auto generation = generation_;
    timer_.async_wait([weak = weak_from_this(), generation](std::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->generation_ != generation || self->phase_ != phase::backoff)
            return;
        self->connect_now();
    });
}

inline void transport_state::drop_connection() {
    if (conn_)
        conn_->abort(make_error_code(errc::connection_closed));
}

inline void transport_state::close(completion done) {
    if (closed_) {
        if (conn_ && conn_->current_state() != connection_core::state::closed) {
            close_waiters_.push_back(std::move(done));
            return;
        }
        return done({});
    }
    closed_ = true;
    phase_ = phase::closed;
    connected_.store(false, std::memory_order_release);
    timer_.cancel();
    // Acks accepted before the close go out before connection.close.
    for (auto& [uid, entry] : channels_)
        if (!entry.acks.empty() && entry.ch->is_open())
            flush_acks(uid);
    fail_unconfirmed(make_error_code(errc::outcome_unknown));
    fail_outbox(make_error_code(errc::outcome_unknown));
    fail_waiters(make_error_code(errc::closed));
    subscriptions_.clear();
    channels_.clear();
    getters_.clear();
    close_waiters_.push_back(std::move(done));
    auto finish = [self = shared_from_this()](std::error_code) {
        auto waiters = std::move(self->close_waiters_);
        self->close_waiters_.clear();
        for (auto& w : waiters)
            w({});
    };
    if (conn_)
        conn_->close(std::move(finish));
    else
        finish({});
}

// ---- channels and topology -----------------------------------------------------------------

inline void transport_state::acquire(const std::shared_ptr<lazy_channel>& lc, channel_setup setup,
                                     channel_ready done) {
    if (lc->ch && lc->ch->is_open())
        return done({}, lc->ch);
    lc->waiters.push_back(std::move(done));
    if (lc->opening)
        return;
    if (!connection_usable()) {
        auto waiters = std::move(lc->waiters);
        lc->waiters.clear();
        for (auto& w : waiters)
            w(make_error_code(closed_ ? errc::closed : errc::connection_closed), nullptr);
        return;
    }
    lc->opening = true;
    lc->ch.reset();
    conn_->open_channel([self = shared_from_this(), lc, setup = std::move(setup)](
                            std::error_code ec, std::shared_ptr<channel_core> ch) mutable {
        auto release = [lc](std::error_code e, const std::shared_ptr<channel_core>& c) {
            lc->opening = false;
            lc->ch = e ? nullptr : c;
            auto waiters = std::move(lc->waiters);
            lc->waiters.clear();
            for (auto& w : waiters)
                w(e, e ? nullptr : c);
        };
        if (ec)
            return release(ec, nullptr);
        if (!setup)
            return release({}, ch);
        setup(ch, [release, ch](std::error_code e) { release(e, ch); });
    });
}

inline void transport_state::admin_call(codec::method m, channel_core::reply_filter filter,
                                        rpc_done done, int attempts) {
    acquire(admin_, nullptr,
            [self = shared_from_this(), m, filter, done = std::move(done),
             attempts](std::error_code ec, std::shared_ptr<channel_core> ch) mutable {
                if (ec)
                    return done(ec, {});
                ch->call(m, filter,
                         [self, m, filter, done = std::move(done),
                          attempts](std::error_code e, codec::command cmd) mutable {
                             // Refused unsent because an earlier request closed the channel:
                             // try again on a new one.
                             if (e == errc::channel_closed && attempts > 1 &&
                                 self->connection_usable())
                                 return self->admin_call(std::move(m), filter, std::move(done),
                                                         attempts - 1);
                             done(e, std::move(cmd));
                         });
            });
}

inline void transport_state::declare_now(const declaration& d, completion done) {
    auto finish = [done = std::move(done)](std::error_code ec, codec::command) mutable {
        done(ec);
    };
    if (const auto* x = std::get_if<topology::exchange>(&d)) {
        codec::exchange_declare m;
        m.exchange = x->name;
        m.type = std::string(topology::to_string(x->type));
        m.durable = x->durable;
        m.auto_delete = x->auto_delete;
        m.internal = x->internal;
        m.arguments = x->arguments;
        return admin_call(std::move(m), &is_one_of<codec::exchange_declare_ok>, std::move(finish));
    }
    if (const auto* q = std::get_if<topology::queue>(&d)) {
        codec::queue_declare m;
        m.queue = q->name;
        m.durable = q->durable;
        m.exclusive = q->exclusive;
        m.auto_delete = q->auto_delete;
        m.arguments = q->arguments;
        return admin_call(std::move(m), &is_one_of<codec::queue_declare_ok>, std::move(finish));
    }
    const auto& b = std::get<topology::binding>(d);
    if (b.kind == topology::destination_kind::queue)
        return admin_call(
            codec::queue_bind{b.destination, b.source, b.routing_key, false, b.arguments},
            &is_one_of<codec::queue_bind_ok>, std::move(finish));
    admin_call(codec::exchange_bind{b.destination, b.source, b.routing_key, false, b.arguments},
               &is_one_of<codec::exchange_bind_ok>, std::move(finish));
}

inline void transport_state::record(const declaration& d) {
    // A server-named queue cannot be declared again under its name: not recorded.
    if (const auto* q = std::get_if<topology::queue>(&d); q && q->name.empty())
        return;
    if (std::find(declared_.begin(), declared_.end(), d) == declared_.end())
        declared_.push_back(d);
}

inline void transport_state::declare(const topology::exchange& x, completion done) {
    with_connection(
        [self = shared_from_this(), x, done = std::move(done)](std::error_code ec) mutable {
            if (ec)
                return done(ec);
            self->declare_now(x, [self, x, done = std::move(done)](std::error_code e) mutable {
                if (!e)
                    self->record(x);
                done(e);
            });
        });
}

inline void transport_state::declare(const topology::queue& q, completion done) {
    with_connection(
        [self = shared_from_this(), q, done = std::move(done)](std::error_code ec) mutable {
            if (ec)
                return done(ec);
            self->declare_now(q, [self, q, done = std::move(done)](std::error_code e) mutable {
                if (!e)
                    self->record(q);
                done(e);
            });
        });
}

inline void transport_state::bind(const topology::binding& b, completion done) {
    with_connection(
        [self = shared_from_this(), b, done = std::move(done)](std::error_code ec) mutable {
            if (ec)
                return done(ec);
            self->declare_now(b, [self, b, done = std::move(done)](std::error_code e) mutable {
                if (!e)
                    self->record(b);
                done(e);
            });
        });
}

inline void transport_state::depth(const std::string& queue, depth_completion done) {
    with_connection([self = shared_from_this(), queue,
                     done = std::move(done)](std::error_code ec) mutable {
        if (ec)
            return done(ec, 0);
        codec::queue_declare m;
        m.queue = queue;
        m.passive = true;
        self->admin_call(std::move(m), &is_one_of<codec::queue_declare_ok>,
                         [done = std::move(done)](std::error_code e, codec::command cmd) mutable {
                             if (e)
                                 return done(e, 0);
                             done({}, std::get<codec::queue_declare_ok>(cmd.method).message_count);
                         });
    });
}

// ---- publishing ----------------------------------------------------------------------------

inline void transport_state::publish(message m, completion done) {
    if (closed_)
        return done(make_error_code(errc::closed));
    // No message leaves letterbox without an id (message.hpp); it also keys the correlation of
    // a basic.return with its publish.
    if (m.id.is_nil())
        m.id = ids_();
    outbox_.push_back(outgoing{std::move(m), std::move(done)});
    pump();
}

inline void transport_state::pump() {
    if (outbox_.empty() || closed_)
        return;
    if (!connection_usable() || phase_ != phase::open) {
        if (pump_waiting_)
            return;
        pump_waiting_ = true;
        return with_connection([self = shared_from_this()](std::error_code ec) {
            self->pump_waiting_ = false;
            if (ec)
                return self->fail_outbox(ec);
            self->pump();
        });
    }
    if (!publisher_->ch || !publisher_->ch->is_open()) {
        if (publisher_->opening)
            return;
        auto self = shared_from_this();
        return acquire(
            publisher_,
            [self](const std::shared_ptr<channel_core>& ch, completion then) {
                self->setup_publisher(ch, std::move(then));
            },
            [self](std::error_code ec, std::shared_ptr<channel_core>) {
                if (ec)
                    return self->fail_outbox(ec);
                self->pump();
            });
    }
    // While the broker blocks publishing (connection.blocked: a memory or disk alarm),
    // publishes wait here instead of piling up in the socket; connection.unblocked resumes.
    if (conn_->blocked())
        return;
    auto& ch = *publisher_->ch;
    while (!outbox_.empty() && unconfirmed_.size() < options_.publish_window) {
        auto o = std::move(outbox_.front());
        outbox_.pop_front();
        auto props = codec::to_basic_properties(o.msg);
        codec::basic_publish p;
        p.exchange = o.msg.exchange;
        p.routing_key = o.msg.routing_key;
        p.mandatory = true;
        if (auto ec = ch.publish(p, props, o.msg.body)) {
            o.done(ec);
            continue;
        }
        unconfirmed_.emplace(++next_seq_, in_flight{std::move(o.done), std::move(o.msg.exchange),
                                                    std::move(o.msg.routing_key),
                                                    std::move(props.message_id), false});
    }
}

inline void transport_state::setup_publisher(const std::shared_ptr<channel_core>& ch,
                                             completion done) {
    std::weak_ptr<transport_state> weak = weak_from_this();
    const auto uid = ch->uid();
    ch->on_command = [weak, uid](codec::command&& cmd) {
        if (auto self = weak.lock())
            self->on_publisher_command(uid, std::move(cmd));
    };
    ch->on_close = [weak, uid](std::error_code ec, const std::string& text) {
        if (auto self = weak.lock())
            self->on_publisher_closed(uid, ec, text);
    };
    ch->call(codec::confirm_select{false}, &is_one_of<codec::confirm_select_ok>,
             [self = shared_from_this(), uid, done = std::move(done)](std::error_code ec,
                                                                      codec::command) mutable {
                 if (!ec) {
                     // Sequence numbers start at 1 on every confirm-mode channel.
                     self->publisher_uid_ = uid;
                     self->next_seq_ = 0;
                 }
                 done(ec);
             });
}

inline void transport_state::on_publisher_command(std::uint64_t uid, codec::command&& cmd) {
    if (uid != publisher_uid_)
        return;
    if (const auto* ack = std::get_if<codec::basic_ack>(&cmd.method))
        return confirm(ack->delivery_tag, ack->multiple, true);
    if (const auto* nack = std::get_if<codec::basic_nack>(&cmd.method))
        return confirm(nack->delivery_tag, nack->multiple, false);
    if (const auto* ret = std::get_if<codec::basic_return>(&cmd.method)) {
        // RabbitMQ sends basic.return before the confirm of the same message, and in publish
        // order: the returned message is the oldest unconfirmed, not yet returned publish with
        // its message-id, exchange and routing key.
        const auto& id = cmd.header ? cmd.header->properties.message_id : std::nullopt;
        for (auto& [seq, p] : unconfirmed_) {
            if (!p.returned && p.message_id == id && p.exchange == ret->exchange &&
                p.routing_key == ret->routing_key) {
                p.returned = true;
                break;
            }
        }
    }
}

inline void transport_state::confirm(std::uint64_t seq, bool multiple, bool ack) {
    auto first = unconfirmed_.begin();
    auto last = unconfirmed_.upper_bound(seq);
    if (!multiple) {
        first = unconfirmed_.find(seq);
        if (first == unconfirmed_.end())
            return;
        last = std::next(first);
    }
    std::vector<in_flight> done;
    for (auto it = first; it != last; ++it)
        done.push_back(std::move(it->second));
    unconfirmed_.erase(first, last);
    for (auto& p : done)
        p.done(!ack         ? make_error_code(errc::publish_nacked)
               : p.returned ? make_error_code(errc::no_route)
                            : std::error_code{});
    pump();
}

inline void transport_state::on_publisher_closed(std::uint64_t uid, std::error_code ec,
                                                 const std::string& text) {
    if (uid != publisher_uid_)
        return;
    publisher_uid_ = 0;
    // RabbitMQ closes the channel with 404 "NOT_FOUND - no exchange 'x' in vhost '/'" for a
    // publish to a missing exchange; every unconfirmed publish to that exchange failed so
    // (those after it were discarded with the channel). Any other unconfirmed publish may or
    // may not have been stored: its outcome is unknown.
    std::optional<std::string> missing;
    if (ec == errc::not_found) {
        constexpr std::string_view marker = "no exchange '";
        if (const auto at = text.find(marker); at != std::string::npos) {
            const auto begin = at + marker.size();
            if (const auto end = text.find('\'', begin); end != std::string::npos)
                missing = text.substr(begin, end - begin);
        }
    }
    auto pending = std::move(unconfirmed_);
    unconfirmed_.clear();
    for (auto& [seq, p] : pending)
        p.done(missing && p.exchange == *missing ? ec : make_error_code(errc::outcome_unknown));
    if (connection_usable())
        pump();
}

inline void transport_state::fail_outbox(std::error_code ec) {
    auto outbox = std::move(outbox_);
    outbox_.clear();
    for (auto& o : outbox)
        o.done(ec);
}

inline void transport_state::fail_unconfirmed(std::error_code ec) {
    publisher_uid_ = 0;
    auto pending = std::move(unconfirmed_);
    unconfirmed_.clear();
    for (auto& [seq, p] : pending)
        p.done(ec);
}

// ---- consuming -----------------------------------------------------------------------------

inline void transport_state::consume(consume_options o, std::function<void(delivery)> on_delivery,
                                     consume_completion done) {
    if (closed_)
        return done(make_error_code(errc::closed), nullptr);
    auto sub = std::make_shared<subscription>();
    if (o.consumer_tag.empty())
        o.consumer_tag =
            "letterbox." + std::to_string(generation_) + "." + std::to_string(++next_tag_);
    sub->options = std::move(o);
    sub->on_delivery = std::move(on_delivery);
    sub->subscribing = true;
    // Registered at once, so that a cancel right after the consume finds it.
    subscriptions_[sub->options.consumer_tag] = sub;
    auto finish = [self = shared_from_this(), sub,
                   done = std::move(done)](std::error_code e) mutable {
        sub->subscribing = false;
        auto waiters = std::move(sub->cancel_waiters);
        sub->cancel_waiters.clear();
        if (e) {
            if (auto it = self->subscriptions_.find(sub->options.consumer_tag);
                it != self->subscriptions_.end() && it->second == sub)
                self->subscriptions_.erase(it);
            for (auto& w : waiters)
                w({});
            return done(e, nullptr);
        }
        if (sub->cancelled) {
            // Cancelled before the consume-ok: cancel now; the consume itself succeeded.
            self->cancel_now(sub, [waiters = std::move(waiters)](std::error_code ec) mutable {
                for (auto& w : waiters)
                    w(ec);
            });
        }
        done({}, sub);
    };
    with_connection(
        [self = shared_from_this(), sub, finish = std::move(finish)](std::error_code ec) mutable {
            if (ec)
                return finish(ec);
            self->subscribe_now(sub, std::move(finish));
        });
}

inline void transport_state::subscribe_now(const std::shared_ptr<subscription>& sub,
                                           completion done) {
    if (!connection_usable())
        return done(make_error_code(errc::connection_closed));
    conn_->open_channel([self = shared_from_this(), sub, done = std::move(done)](
                            std::error_code ec, std::shared_ptr<channel_core> ch) mutable {
        if (ec)
            return done(ec);
        const auto uid = ch->uid();
        self->channels_[uid] = settle_entry{ch, {}, false};
        std::weak_ptr<transport_state> weak = self;
        std::weak_ptr<subscription> weak_sub = sub;
        ch->on_command = [weak, weak_sub, uid](codec::command&& cmd) {
            if (auto s = weak.lock())
                s->on_consumer_command(weak_sub, uid, std::move(cmd));
        };
        ch->on_close = [weak, weak_sub, uid](std::error_code, const std::string&) {
            if (auto s = weak.lock())
                s->on_consumer_closed(weak_sub, uid);
        };
        auto fail = [self, uid, ch](std::error_code e, completion& d) {
            self->channels_.erase(uid);
            if (ch->is_open())
                ch->close(nullptr);
            d(e);
        };
        ch->call(codec::basic_qos{0, sub->options.prefetch, false}, &is_one_of<codec::basic_qos_ok>,
                 [self, sub, ch, fail, done = std::move(done)](std::error_code e,
                                                               codec::command) mutable {
                     if (e)
                         return fail(e, done);
                     codec::basic_consume m;
                     m.queue = sub->options.queue;
                     m.consumer_tag = sub->options.consumer_tag;
                     m.no_ack = sub->options.no_ack;
                     m.exclusive = sub->options.exclusive;
                     m.arguments = sub->options.arguments;
                     ch->call(std::move(m), &is_one_of<codec::basic_consume_ok>,
                              [sub, ch, fail, done = std::move(done)](std::error_code e2,
                                                                      codec::command) mutable {
                                  if (e2)
                                      return fail(e2, done);
                                  sub->ch = ch;
                                  done({});
                              });
                 });
    });
}

inline void transport_state::on_consumer_command(const std::weak_ptr<subscription>& weak_sub,
                                                 std::uint64_t uid, codec::command&& cmd) {
    auto sub = weak_sub.lock();
    if (closed_)
        return;
    if (auto* deliver = std::get_if<codec::basic_deliver>(&cmd.method)) {
        delivery d;
        d.delivery_tag = deliver->delivery_tag;
        d.redelivered = deliver->redelivered;
        d.consumer_tag = deliver->consumer_tag;
        d.channel = uid;
        std::error_code ec;
        d.msg = codec::to_message(std::move(cmd), ec);
        auto entry = channels_.find(uid);
        if (entry == channels_.end())
            return;
        if (!sub || !sub->on_delivery) {
            // Its consumer is gone (cancelled with a delivery in flight): give it back.
            (void)entry->second.ch->send(codec::basic_reject{d.delivery_tag, true});
            return;
        }
        d.queue = sub->options.queue;
        if (!sub->options.no_ack)
            entry->second.unacked.insert(d.delivery_tag);
        if (sub->started)
            sub->on_delivery(std::move(d));
        else
            sub->pending.push_back(std::move(d));
        return;
    }
    if (const auto* cancel = std::get_if<codec::basic_cancel>(&cmd.method)) {
        // Broker-initiated cancel (queue deleted, ...): the consumer is gone for good.
        if (!cancel->no_wait)
            if (auto entry = channels_.find(uid); entry != channels_.end())
                (void)entry->second.ch->send(codec::basic_cancel_ok{cancel->consumer_tag});
        if (sub)
            subscriptions_.erase(sub->options.consumer_tag);
        retire(uid);
    }
}

inline void transport_state::on_consumer_closed(const std::weak_ptr<subscription>& weak_sub,
                                                std::uint64_t uid) {
    channels_.erase(uid);
    // A lost connection is handled by the recovery, which subscribes again.
    if (!connection_usable())
        return;
    auto sub = weak_sub.lock();
    if (!sub || !sub->ch || sub->ch->uid() != uid)
        return;
    auto it = subscriptions_.find(sub->options.consumer_tag);
    if (it == subscriptions_.end() || it->second != sub)
        return;
    // The channel died under a live consumer (a channel error such as an unknown delivery
    // tag): its deliveries are requeued by the broker; consume again on a new channel.
    sub->ch.reset();
    sub->pending.clear();
    subscribe_now(sub, [self = shared_from_this(), sub](std::error_code ec) {
        if (ec)
            self->subscriptions_.erase(sub->options.consumer_tag);
    });
}

inline void transport_state::start_delivering(const std::shared_ptr<subscription>& sub) {
    while (!sub->pending.empty() && !closed_) {
        auto d = std::move(sub->pending.front());
        sub->pending.pop_front();
        if (channels_.contains(d.channel))
            sub->on_delivery(std::move(d));
    }
    sub->started = true;
    auto after = std::move(sub->after_started);
    sub->after_started.clear();
    for (auto& f : after)
        f();
}

inline void transport_state::cancel(const std::string& tag, completion done) {
    if (closed_)
        return done(make_error_code(errc::closed));
    auto it = subscriptions_.find(tag);
    if (it == subscriptions_.end())
        return done({});
    auto sub = it->second;
    subscriptions_.erase(it);
    if (sub->subscribing) {
        sub->cancelled = true;
        sub->cancel_waiters.push_back(std::move(done));
        return;
    }
    cancel_now(sub, std::move(done));
}

inline void transport_state::cancel_now(const std::shared_ptr<subscription>& sub, completion done) {
    if (!sub->ch || !sub->ch->is_open())
        return done({});
    const auto uid = sub->ch->uid();
    sub->ch->call(
        codec::basic_cancel{sub->options.consumer_tag, false}, &is_one_of<codec::basic_cancel_ok>,
        [self = shared_from_this(), sub, uid, done = std::move(done)](std::error_code ec,
                                                                      codec::command) mutable {
            self->retire(uid);
            if (ec == errc::channel_closed || ec == errc::connection_closed)
                ec.clear();
            // Every delivery sent before the cancel-ok reaches the consumer before
            // the cancel completes.
            if (sub->started)
                return done(ec);
            sub->after_started.push_back([done = std::move(done), ec]() mutable { done(ec); });
        });
}

// A cancelled consumer's channel stays open while it holds unacknowledged deliveries (they
// can still be settled, as on RabbitMQ), then closes.
inline void transport_state::retire(std::uint64_t uid) {
    auto it = channels_.find(uid);
    if (it == channels_.end())
        return;
    if (it->second.ch->is_open() && !it->second.unacked.empty()) {
        it->second.retired = true;
        return;
    }
    flush_acks(uid);
    auto ch = it->second.ch;
    channels_.erase(it);
    if (ch->is_open())
        ch->close(nullptr);
}

// The acks of one strand turn (a consumer acking the deliveries of one read) go out as one
// `basic.ack(multiple)` when no tag below the highest is still owed, or one by one otherwise:
// fewer frames for the broker to process, and the same outcome.
inline void transport_state::flush_acks(std::uint64_t uid) {
    auto it = channels_.find(uid);
    if (it == channels_.end())
        return;
    auto& entry = it->second;
    entry.flush_posted = false;
    if (entry.acks.empty())
        return;
    auto acks = std::move(entry.acks);
    entry.acks.clear();
    std::sort(acks.begin(), acks.end());
    const auto highest = acks.back();
    if (acks.size() > 1 && (entry.unacked.empty() || *entry.unacked.begin() > highest)) {
        (void)entry.ch->send(codec::basic_ack{highest, true});
        return;
    }
    for (const auto tag : acks)
        (void)entry.ch->send(codec::basic_ack{tag, false});
}

inline void transport_state::settle(std::uint64_t channel, std::uint64_t tag,
                                    letterbox::detail::settlement how, bool requeue,
                                    completion done) {
    if (closed_)
        return done(make_error_code(errc::closed));
    auto it = channels_.find(channel);
    if (it == channels_.end() || !it->second.ch->is_open())
        return done(make_error_code(errc::channel_closed)); // it will be redelivered
    auto& entry = it->second;
    // A tag this channel does not owe an answer for (settled twice, or never delivered): the
    // broker closes the channel with 406, requeueing the channel's other unacknowledged
    // deliveries, as the in-memory model does. The frame still goes out so that both behave
    // the same, and the caller learns it now rather than from the broker's asynchronous close.
    const bool known = entry.unacked.erase(tag) == 1;
    if (how == letterbox::detail::settlement::ack && known) {
        entry.acks.push_back(tag);
        if (entry.retired && entry.unacked.empty())
            retire(channel); // flushes the acks, then closes the channel
        else if (!entry.flush_posted) {
            entry.flush_posted = true;
            boost::asio::post(strand_,
                              [self = shared_from_this(), channel] { self->flush_acks(channel); });
        }
        return done({});
    }
    // Anything else on this channel goes out after the acks already accepted.
    flush_acks(channel);
    std::error_code ec;
    switch (how) {
    case letterbox::detail::settlement::ack:
        ec = entry.ch->send(codec::basic_ack{tag, false});
        break;
    case letterbox::detail::settlement::nack:
        ec = entry.ch->send(codec::basic_nack{tag, false, requeue});
        break;
    case letterbox::detail::settlement::reject:
        ec = entry.ch->send(codec::basic_reject{tag, requeue});
        break;
    }
    if (!ec && !known)
        ec = errc::precondition_failed;
    if (entry.retired && entry.unacked.empty())
        retire(channel);
    done(ec);
}

// ---- basic.get -----------------------------------------------------------------------------

inline void transport_state::get(const std::string& queue, get_completion done) {
    with_connection(
        [self = shared_from_this(), queue, done = std::move(done)](std::error_code ec) mutable {
            if (ec)
                return done(ec, std::nullopt);
            // One channel per queue: a get on a missing queue closes its channel (404), and that
            // must not requeue what was fetched, and is still held, from other queues.
            auto& lc = self->getters_[queue];
            if (!lc)
                lc = std::make_shared<lazy_channel>();
            auto getter = lc;
            self->acquire(
                getter,
                [self, queue](const std::shared_ptr<channel_core>& ch, completion then) {
                    const auto uid = ch->uid();
                    self->channels_[uid] = settle_entry{ch, {}, false};
                    std::weak_ptr<transport_state> weak = self;
                    ch->on_close = [weak, uid](std::error_code, const std::string&) {
                        if (auto s = weak.lock())
                            s->channels_.erase(uid);
                    };
                    then({});
                },
                [self, queue, done = std::move(done)](std::error_code e,
                                                      std::shared_ptr<channel_core> ch) mutable {
                    if (e)
                        return done(e, std::nullopt);
                    ch->call(codec::basic_get{queue, false},
                             &is_one_of<codec::basic_get_ok, codec::basic_get_empty>,
                             [self, queue, ch, done = std::move(done)](std::error_code e2,
                                                                       codec::command cmd) mutable {
                                 if (e2)
                                     return done(e2, std::nullopt);
                                 const auto* ok = std::get_if<codec::basic_get_ok>(&cmd.method);
                                 if (!ok)
                                     return done({}, std::nullopt);
                                 delivery d;
                                 d.delivery_tag = ok->delivery_tag;
                                 d.redelivered = ok->redelivered;
                                 d.message_count = ok->message_count;
                                 d.queue = queue;
                                 d.channel = ch->uid();
                                 std::error_code me;
                                 d.msg = codec::to_message(std::move(cmd), me);
                                 if (auto it = self->channels_.find(d.channel);
                                     it != self->channels_.end())
                                     it->second.unacked.insert(d.delivery_tag);
                                 done({}, std::move(d));
                             });
                });
        });
}

} // namespace letterbox::amqp::detail
