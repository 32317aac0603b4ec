// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of transport_state (included by transport_state.hpp): consumers, from
// basic.consume to their cancel.

#include <letterbox/amqp/detail/transport_state.hpp>
#include <letterbox/config.hpp>
#include <letterbox/topology/direct_reply_to.hpp>

#include <letterbox/error.hpp>

#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

// ---- consuming -----------------------------------------------------------------------------

LETTERBOX_DECL void transport_state::consume(consume_options o,
                                             std::function<void(delivery)> on_delivery,
                                             consume_completion done) {
    if (closed_)
        return done(make_error_code(errc::closed), nullptr);
    const bool replies = o.queue == topology::direct_reply_to;
    if (replies && reply_sub_)
        // One reply consumer per channel, and they would all go on the publishing channel:
        // refused here, before the broker closes that channel (406 reply consumer already set).
        return done(make_error_code(errc::precondition_failed), nullptr);
    auto sub = std::make_shared<subscription>();
    if (o.consumer_tag.empty())
        o.consumer_tag =
            "letterbox." + std::to_string(generation_) + "." + std::to_string(++next_tag_);
    sub->options = std::move(o);
    sub->on_delivery = std::move(on_delivery);
    sub->subscribing = true;
    // Registered at once, so that a cancel right after the consume finds it.
    subscriptions_[sub->options.consumer_tag] = sub;
    if (replies)
        reply_sub_ = sub;
    auto finish = [self = shared_from_this(), sub,
                   done = std::move(done)](std::error_code e) mutable {
        sub->subscribing = false;
        auto waiters = std::move(sub->cancel_waiters);
        sub->cancel_waiters.clear();
        if (e) {
            if (auto it = self->subscriptions_.find(sub->options.consumer_tag);
                it != self->subscriptions_.end() && it->second == sub)
                self->subscriptions_.erase(it);
            if (self->reply_sub_ == sub)
                self->reply_sub_.reset();
            for (auto& w : waiters)
                w({});
            return done(e, nullptr);
        }
        if (sub->cancelled) {
            // Cancelled before the consume-ok: cancel now; the consume itself succeeded.
            auto then = [waiters = std::move(waiters)](std::error_code ec) mutable {
                for (auto& w : waiters)
                    w(ec);
            };
            if (sub == self->reply_sub_)
                self->cancel_replies(sub, std::move(then));
            else
                self->cancel_now(sub, std::move(then));
        }
        done({}, sub);
    };
    with_connection(
        [self = shared_from_this(), sub, finish = std::move(finish)](std::error_code ec) mutable {
            if (ec)
                return finish(ec);
            if (sub == self->reply_sub_)
                return self->subscribe_replies(sub, std::move(finish));
            self->subscribe_now(sub, std::move(finish));
        });
}

LETTERBOX_DECL void transport_state::subscribe_replies(const std::shared_ptr<subscription>& sub,
                                                       completion done) {
    if (!connection_usable())
        return done(make_error_code(errc::connection_closed));
    if (sub->ch && sub->ch->is_open())
        return done({}); // a new publishing channel took it meanwhile
    // A publishing channel being set up consumes replies as its last step (setup_publisher).
    if (publisher_->ch && publisher_->ch->is_open() && publisher_->ch->uid() == publisher_uid_)
        return consume_replies_on(publisher_->ch, std::move(done));
    auto self = shared_from_this();
    acquire(
        publisher_,
        [self](const std::shared_ptr<channel_core>& ch, completion then) {
            self->setup_publisher(ch, std::move(then));
        },
        [done = std::move(done)](std::error_code ec, std::shared_ptr<channel_core>) mutable {
            done(ec);
        });
}

LETTERBOX_DECL void transport_state::consume_replies_on(const std::shared_ptr<channel_core>& ch,
                                                        completion done) {
    auto sub = reply_sub_;
    if (!sub)
        return done({});
    codec::basic_consume m;
    m.queue = std::string(topology::direct_reply_to);
    m.consumer_tag = sub->options.consumer_tag;
    m.no_ack = true;
    m.arguments = sub->options.arguments;
    ch->call(std::move(m), &is_one_of<codec::basic_consume_ok>,
             [self = shared_from_this(), sub, ch, done = std::move(done)](std::error_code ec,
                                                                          codec::command) mutable {
                 if (!ec && self->reply_sub_ == sub) {
                     sub->ch = ch;
                     // Registered like a consumer's channel, for its deliveries; it owes no
                     // acknowledgement (no-ack).
                     self->channels_[ch->uid()] = settle_entry{ch, {}, false};
                 }
                 done(ec);
             });
}

LETTERBOX_DECL void transport_state::cancel_replies(const std::shared_ptr<subscription>& sub,
                                                    completion done) {
    if (reply_sub_ == sub)
        reply_sub_.reset();
    auto ch = std::exchange(sub->ch, nullptr);
    if (!ch || !ch->is_open())
        return done({});
    // The publishing channel stays: only the consumer goes.
    ch->call(codec::basic_cancel{sub->options.consumer_tag, false},
             &is_one_of<codec::basic_cancel_ok>,
             [done = std::move(done)](std::error_code ec, codec::command) mutable {
                 if (ec == errc::channel_closed || ec == errc::connection_closed)
                     ec.clear();
                 done(ec);
             });
}

LETTERBOX_DECL void transport_state::subscribe_now(const std::shared_ptr<subscription>& sub,
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
        ch->on_close = [weak, weak_sub, uid](std::error_code e, const std::string& text) {
            if (auto s = weak.lock()) {
                s->count_close(e, text);
                s->on_consumer_closed(weak_sub, uid);
            }
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

LETTERBOX_DECL void
transport_state::on_consumer_command(const std::weak_ptr<subscription>& weak_sub, std::uint64_t uid,
                                     codec::command&& cmd) {
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

LETTERBOX_DECL void transport_state::on_consumer_closed(const std::weak_ptr<subscription>& weak_sub,
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

LETTERBOX_DECL void transport_state::start_delivering(const std::shared_ptr<subscription>& sub) {
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

LETTERBOX_DECL void transport_state::cancel(const std::string& tag, completion done) {
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
    if (sub == reply_sub_)
        return cancel_replies(sub, std::move(done));
    cancel_now(sub, std::move(done));
}

LETTERBOX_DECL void transport_state::cancel_now(const std::shared_ptr<subscription>& sub,
                                                completion done) {
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

} // namespace letterbox::amqp::detail
