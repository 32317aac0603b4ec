// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of transport_state (included by transport_state.hpp): publishing on the
// confirm-mode channel, the confirms and returns.

#include <letterbox/amqp/detail/transport_state.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/confirms.hpp>

#include <letterbox/error.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

// ---- publishing ----------------------------------------------------------------------------

LETTERBOX_DECL void transport_state::publish(message m, completion done) {
    if (closed_)
        return done(make_error_code(errc::closed));
    // No message leaves letterbox without an id (message.hpp); it also keys the correlation of
    // a basic.return with its publish.
    if (m.id.is_nil())
        m.id = ids_();
    outbox_.push_back(outgoing{std::move(m), std::move(done)});
    pump();
}

LETTERBOX_DECL void transport_state::pump() {
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
        // A reply to a direct reply-to address is delivered and yet returned when it is
        // mandatory (it reaches no queue): it goes without the flag.
        p.mandatory = !topology::is_direct_reply(o.msg.exchange, o.msg.routing_key);
        if (auto ec = ch.publish(p, props, o.msg.body)) {
            o.done(ec);
            continue;
        }
        unconfirmed_.emplace(++next_seq_, in_flight{std::move(o.done), std::move(o.msg.exchange),
                                                    std::move(o.msg.routing_key),
                                                    std::move(props.message_id), false});
    }
}

LETTERBOX_DECL void transport_state::setup_publisher(const std::shared_ptr<channel_core>& ch,
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
             [self = shared_from_this(), ch, uid, done = std::move(done)](std::error_code ec,
                                                                          codec::command) mutable {
                 if (ec)
                     return done(ec);
                 // Sequence numbers start at 1 on every confirm-mode channel.
                 self->publisher_uid_ = uid;
                 self->next_seq_ = 0;
                 if (!self->reply_sub_)
                     return done(ec);
                 // The reply consumer moves to every new publishing channel, before the first
                 // publish that may name it.
                 self->consume_replies_on(ch, std::move(done));
             });
}

LETTERBOX_DECL void transport_state::on_publisher_command(std::uint64_t uid, codec::command&& cmd) {
    if (uid != publisher_uid_)
        return;
    if (std::holds_alternative<codec::basic_deliver>(cmd.method)) {
        // A reply to this channel's direct reply-to consumer.
        if (reply_sub_)
            on_consumer_command(reply_sub_, uid, std::move(cmd));
        return;
    }
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

LETTERBOX_DECL void transport_state::confirm(std::uint64_t seq, bool multiple, bool ack) {
    auto done = letterbox::detail::take_confirmed(unconfirmed_, seq, multiple);
    if (done.empty() && !multiple)
        return; // a confirm of no unconfirmed publish
    for (auto& p : done)
        p.done(letterbox::detail::confirm_outcome(ack, p.returned));
    pump();
}

LETTERBOX_DECL void transport_state::on_publisher_closed(std::uint64_t uid, std::error_code ec,
                                                         const std::string& text) {
    if (uid != publisher_uid_)
        return;
    publisher_uid_ = 0;
    // The reply consumer went with the channel; the next publishing channel takes it again.
    if (reply_sub_ && reply_sub_->ch && reply_sub_->ch->uid() == uid) {
        reply_sub_->ch.reset();
        channels_.erase(uid);
    }
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

LETTERBOX_DECL void transport_state::fail_outbox(std::error_code ec) {
    auto outbox = std::move(outbox_);
    outbox_.clear();
    for (auto& o : outbox)
        o.done(ec);
}

LETTERBOX_DECL void transport_state::fail_unconfirmed(std::error_code ec) {
    publisher_uid_ = 0;
    auto pending = std::move(unconfirmed_);
    unconfirmed_.clear();
    for (auto& [seq, p] : pending)
        p.done(ec);
}

} // namespace letterbox::amqp::detail
