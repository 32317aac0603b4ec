// SPDX-License-Identifier: BSL-1.0
#pragma once

// Direct reply-to (`amq.rabbitmq.reply-to`): the reply consumer, the reply address a request
// carries, the delivery of a reply and the declarations of the pseudo-queue. Member functions of
// `broker_state`, declared in ../broker_state.hpp. What RabbitMQ 3.10.8 was seen to do is in
// docs/in-memory-transport.md, "Direct reply-to".

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL std::string broker_state::reply_consume(channel_state& ch,
                                                       basic_consume_options opts,
                                                       delivery_callback on_delivery,
                                                       cancel_handler on_cancel,
                                                       std::error_code& ec) {
    // rabbit_channel checks the acknowledgement mode first, then whether one is set.
    if (!opts.no_ack) {
        ec = channel_error(ch, errc::precondition_failed, "reply consumer cannot acknowledge");
        return {};
    }
    if (!ch.reply_tag.empty()) {
        ec = channel_error(ch, errc::precondition_failed, "reply consumer already set");
        return {};
    }
    if (!take_consumer_tag(ch, opts.consumer_tag, ec))
        return {};
    // A consumer of no queue: replies reach it through deliver_reply only, outside any qos.
    auto c = std::make_shared<consumer_state>();
    c->tag = opts.consumer_tag;
    c->channel = &ch;
    c->no_ack = true;
    c->on_delivery = std::move(on_delivery);
    c->on_cancel = std::move(on_cancel);
    ch.consumers.emplace(c->tag, c);
    ch.reply_tag = c->tag;
    // RabbitMQ's key encodes the channel's process and a secret; any key that names the
    // channel, and is never reused, behaves the same.
    ch.reply_key = std::to_string(ch.id) + "." + std::to_string(++reply_keys_);
    reply_channels_[ch.reply_key] = shared_channel(ch);
    return c->tag;
}

LETTERBOX_DECL std::error_code broker_state::set_reply_address(channel_state& ch, message& msg) {
    if (msg.properties.reply_to != topology::direct_reply_to)
        return {};
    if (ch.reply_tag.empty())
        return channel_error(ch, errc::precondition_failed, "fast reply consumer does not exist");
    msg.properties.reply_to = std::string(topology::direct_reply_to_prefix) + ch.reply_key;
    return {};
}

LETTERBOX_DECL void broker_state::deliver_reply(const std::shared_ptr<const envelope>& env) {
    const auto& m = env->msg;
    if (!m.exchange.empty() || !m.routing_key.starts_with(topology::direct_reply_to_prefix))
        return;
    const auto key =
        std::string_view(m.routing_key).substr(topology::direct_reply_to_prefix.size());
    const auto it = reply_channels_.find(key);
    if (it == reply_channels_.end())
        return; // dropped, as RabbitMQ drops a reply to a channel that is gone
    auto ch = it->second.lock();
    if (!ch || !ch->open || ch->reply_key != key)
        return;
    const auto c = ch->consumers.find(ch->reply_tag);
    if (c == ch->consumers.end())
        return;
    basic_delivery d;
    d.msg = std::shared_ptr<const message>(env, &env->msg);
    d.delivery_tag = ch->next_tag++;
    d.consumer_tag = ch->reply_tag;
    d.queue = std::string(topology::direct_reply_to);
    d.channel = ch->id;
    events_.push_back(ev_deliver{ch.get(), c->second, std::move(d)});
}

LETTERBOX_DECL std::optional<queue_declare_ok>
broker_state::declare_reply_queue(channel_state& ch, const std::string& name, std::error_code& ec) {
    // Passive or not, with any flags: the pseudo-queue always exists and counts one consumer,
    // and a reply address exists while its channel consumes replies.
    if (name == topology::direct_reply_to)
        return queue_declare_ok{name, 0, 1};
    if (!name.starts_with(topology::direct_reply_to_prefix))
        return std::nullopt;
    const auto key = std::string_view(name).substr(topology::direct_reply_to_prefix.size());
    if (const auto it = reply_channels_.find(key); it != reply_channels_.end())
        if (auto owner = it->second.lock(); owner && owner->open && owner->reply_key == key)
            return queue_declare_ok{name, 0, 1};
    ec = channel_error(ch, errc::not_found, "no queue '" + name + "' in vhost '/'");
    return queue_declare_ok{};
}

LETTERBOX_DECL void broker_state::forget_reply_consumer(channel_state& ch) {
    if (ch.reply_key.empty())
        return;
    reply_channels_.erase(ch.reply_key);
    ch.reply_key.clear();
    ch.reply_tag.clear();
}

} // namespace letterbox::in_memory::detail
