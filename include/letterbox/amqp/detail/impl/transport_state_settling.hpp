// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of transport_state (included by transport_state.hpp): settling deliveries
// (acks batched per strand turn, nacks, rejects), the channels of cancelled consumers, and
// basic.get.

#include <letterbox/amqp/detail/transport_state.hpp>
#include <letterbox/config.hpp>

#include <letterbox/error.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

// A cancelled consumer's channel stays open while it holds unacknowledged deliveries (they
// can still be settled, as on RabbitMQ), then closes.
LETTERBOX_DECL void transport_state::retire(std::uint64_t uid) {
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
LETTERBOX_DECL void transport_state::flush_acks(std::uint64_t uid) {
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

LETTERBOX_DECL void transport_state::settle(std::uint64_t channel, std::uint64_t tag,
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

LETTERBOX_DECL void transport_state::get(const std::string& queue, get_completion done) {
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
                    ch->on_close = [weak, uid](std::error_code e, const std::string& text) {
                        if (auto s = weak.lock()) {
                            s->channels_.erase(uid);
                            s->count_close(e, text);
                        }
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
