// SPDX-License-Identifier: BSL-1.0
#pragma once

// Member functions of `transport_state`, declared in ../transport_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/detail/confirms.hpp>
#include <letterbox/detail/consumer_timeout.hpp>
#include <letterbox/transport/in_memory/detail/transport_state.hpp>

#include <algorithm>
#include <iterator>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL transport_state::~transport_state() = default;

LETTERBOX_DECL std::error_code transport_state::declare(const topology::exchange& x) {
    return with_admin([&](channel& ch) { return ch.exchange_declare(x); });
}

LETTERBOX_DECL std::error_code transport_state::declare(const topology::queue& q) {
    return with_admin([&](channel& ch) { return ch.queue_declare(q); });
}

LETTERBOX_DECL std::uint32_t transport_state::depth(const std::string& queue, std::error_code& ec) {
    std::uint32_t ready = 0;
    ec = with_admin([&](channel& ch) {
        topology::queue q;
        q.name = queue;
        std::error_code e;
        const auto ok = ch.queue_declare(q, e, true);
        if (!e)
            ready = static_cast<std::uint32_t>(ok.message_count);
        return e;
    });
    return ready;
}

LETTERBOX_DECL std::optional<delivery> transport_state::get(const std::string& queue,
                                                            std::error_code& ec) {
    if (closed_) {
        ec = errc::closed;
        return std::nullopt;
    }
    if (!ensure_open()) {
        ec = errc::connection_closed;
        return std::nullopt;
    }
    auto ch = getter(queue);
    auto d = ch.basic_get(queue, ec, false);
    if (!ch.is_open()) {
        // The get failed with a channel error (a missing queue): forget the channel, the
        // next get on this queue opens a new one.
        channels_.erase(ch.id());
        getters_.erase(queue);
    }
    if (ec || !d)
        return std::nullopt;
    return d->to_delivery();
}

LETTERBOX_DECL std::error_code transport_state::bind(const topology::binding& b) {
    return with_admin([&](channel& ch) {
        return b.kind == topology::destination_kind::queue
                   ? ch.queue_bind(b.destination, b.source, b.routing_key, b.arguments)
                   : ch.exchange_bind(b.destination, b.source, b.routing_key, b.arguments);
    });
}

LETTERBOX_DECL void transport_state::publish(message&& m, completion done) {
    if (closed_)
        return done(errc::closed);
    if (!ensure_open())
        return done(errc::connection_closed);
    // A message leaves letterbox with an id (message.hpp): the broker's seeded sequence, so
    // the same run gives the same ids.
    if (m.id.is_nil())
        m.id = broker_->generate_message_id();
    if (!publisher_.is_open())
        open_publisher();
    const auto seq = publisher_.next_publish_seq();
    add_pending(seq, std::move(done));
    in_flight_ = seq;
    // A reply to a direct reply-to address is delivered and yet returned when published
    // mandatory (RabbitMQ routes it to no queue): it is published without the flag.
    const bool mandatory = !topology::is_direct_reply(m.exchange, m.routing_key);
    auto ec = publisher_.publish_moved(std::move(m), mandatory);
    in_flight_ = 0;
    // Either this publish closed the channel (it was never stored: report why), or the
    // channel closed after storing it (its confirm will never come: outcome unknown).
    if (auto it = find_pending(seq); it != pending_.end() && (ec || !publisher_.is_open())) {
        auto h = std::move(it->done);
        pending_.erase(it);
        h(ec ? ec : make_error_code(errc::outcome_unknown));
    }
}

LETTERBOX_DECL std::shared_ptr<transport_state::subscription>
transport_state::consume(const consume_options& o, std::function<void(delivery)> on_delivery,
                         std::error_code& ec) {
    if (closed_) {
        ec = errc::closed;
        return {};
    }
    if (!ensure_open()) {
        ec = errc::connection_closed;
        return {};
    }
    const bool replies = o.queue == topology::direct_reply_to;
    if (replies && reply_sub_) {
        // The broker takes one reply consumer per channel, and they all go on the publishing
        // channel: refused here, before the broker would close that channel.
        ec = errc::precondition_failed;
        return {};
    }
    auto sub = std::make_shared<subscription>();
    sub->options = o;
    sub->on_delivery = std::move(on_delivery);
    ec = subscribe(sub);
    if (ec)
        return {};
    subscriptions_.emplace(sub->options.consumer_tag, sub);
    if (replies)
        reply_sub_ = sub;
    return sub;
}

LETTERBOX_DECL void transport_state::start_delivering(const std::shared_ptr<subscription>& sub) {
    while (!sub->pending.empty()) {
        auto d = std::move(sub->pending.front());
        sub->pending.pop_front();
        if (auto it = channels_.find(d.channel); it != channels_.end() && it->second.is_open())
            sub->on_delivery(std::move(d));
    }
    sub->started = true;
}

LETTERBOX_DECL std::error_code transport_state::cancel(const std::string& tag) {
    auto it = subscriptions_.find(tag);
    if (it == subscriptions_.end())
        return {};
    auto sub = it->second;
    subscriptions_.erase(it);
    std::error_code ec;
    if (sub->ch.is_open())
        ec = sub->ch.basic_cancel(tag);
    if (sub == reply_sub_)
        reply_sub_.reset(); // its channel is the publishing channel: it stays
    else
        retire(sub->ch);
    return ec;
}

LETTERBOX_DECL std::error_code transport_state::settle(std::uint64_t channel, std::uint64_t tag,
                                                       letterbox::detail::settlement how,
                                                       bool requeue) {
    if (closed_)
        return errc::closed;
    auto it = channels_.find(channel);
    if (it == channels_.end() || !it->second.is_open())
        return errc::channel_closed; // the delivery will be redelivered
    auto ch = it->second;
    std::error_code ec;
    switch (how) {
    case letterbox::detail::settlement::ack:
        ec = ch.basic_ack(tag);
        break;
    case letterbox::detail::settlement::nack:
        ec = ch.basic_nack(tag, false, requeue);
        break;
    case letterbox::detail::settlement::reject:
        ec = ch.basic_reject(tag, requeue);
        break;
    }
    if (retired_.contains(ch.id()))
        retire(ch);
    return ec;
}

LETTERBOX_DECL void transport_state::close() {
    if (closed_)
        return;
    closed_ = true;
    connected_.store(false, std::memory_order_release);
    subscriptions_.clear();
    reply_sub_.reset();
    if (conn_.is_open())
        conn_.close();
    fail_pending(errc::outcome_unknown);
    channels_.clear();
    getters_.clear();
    disconnect_watchers_.notify(errc::closed);
}

LETTERBOX_DECL std::uint64_t transport_state::watch_disconnect(completion f) {
    if (closed_) {
        boost::asio::post(executor(), [f = std::move(f)]() mutable { f(errc::closed); });
        return 0;
    }
    return disconnect_watchers_.add(std::move(f));
}

LETTERBOX_DECL channel transport_state::getter(const std::string& queue) {
    if (auto it = getters_.find(queue); it != getters_.end()) {
        if (it->second.is_open())
            return it->second;
        channels_.erase(it->second.id());
    }
    auto ch = conn_.open_channel();
    channels_[ch.id()] = ch;
    getters_[queue] = ch;
    // A fetched message held past the consumer timeout closes this channel too; the next get
    // opens another (above), and the broker gives the message to whoever asks next.
    std::weak_ptr<transport_state> self = weak_from_this();
    ch.on_close([self](const close_reason& why) {
        if (auto s = self.lock())
            s->count_close(why);
    });
    return ch;
}

LETTERBOX_DECL bool transport_state::ensure_open() {
    if (!conn_.is_open() && !closed_)
        connect();
    return conn_.is_open();
}

LETTERBOX_DECL void transport_state::connect() {
    auto next = broker_->connect(name_);
    if (!next.is_open()) {
        // Refused: the broker is down (broker::go_down). Keep the lost connection, its
        // channels and the consumers as they are (operations fail with connection_closed
        // meanwhile), and recover when the broker says it is back: a RabbitMQ client would
        // retry every recovery interval instead.
        wait_for_broker();
        return;
    }
    channels_.clear();
    getters_.clear();
    retired_.clear();
    conn_ = std::move(next);
    connected_.store(true, std::memory_order_release);
    std::weak_ptr<transport_state> self = weak_from_this();
    conn_.on_close([self](const close_reason&) {
        if (auto s = self.lock())
            s->on_connection_lost();
    });
    open_publisher();
    admin_ = conn_.open_channel();
    // A consumer whose queue did not survive (e.g. a non-durable queue after a restart) is
    // dropped, as the broker would have cancelled it.
    for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
        if (subscribe(it->second)) {
            channels_.erase(it->second->ch.id());
            it = subscriptions_.erase(it);
        } else {
            ++it;
        }
    }
}

LETTERBOX_DECL void transport_state::wait_for_broker() {
    if (waiting_for_broker_)
        return;
    waiting_for_broker_ = true;
    std::weak_ptr<transport_state> self = weak_from_this();
    broker_->async_wait_up([self](std::error_code) {
        if (auto s = self.lock()) {
            s->waiting_for_broker_ = false;
            s->ensure_open();
        }
    });
}

LETTERBOX_DECL void
transport_state::on_consumer_channel_closed(const std::shared_ptr<subscription>& sub,
                                            std::uint64_t id) {
    channels_.erase(id);
    if (closed_ || !conn_.is_open() || sub->ch.id() != id)
        return;
    auto it = subscriptions_.find(sub->options.consumer_tag);
    if (it == subscriptions_.end() || it->second != sub)
        return;
    sub->pending.clear();
    if (subscribe(sub)) {
        channels_.erase(sub->ch.id());
        subscriptions_.erase(it);
    }
}

LETTERBOX_DECL void transport_state::on_broker_cancel(const std::string& tag) {
    auto it = subscriptions_.find(tag);
    if (it == subscriptions_.end())
        return;
    auto sub = it->second;
    subscriptions_.erase(it);
    if (sub == reply_sub_)
        reply_sub_.reset();
    else
        retire(sub->ch);
}

LETTERBOX_DECL void transport_state::open_publisher() {
    publisher_ = conn_.open_channel();
    publisher_.confirm_select();
    std::weak_ptr<transport_state> self = weak_from_this();
    publisher_.on_return([self](const returned_message& r) {
        if (auto s = self.lock())
            if (auto it = s->find_pending(r.publish_seq); it != s->pending_.end())
                it->returned = true;
    });
    publisher_.on_confirm([self](std::uint64_t seq, bool ack, bool multiple) {
        if (auto s = self.lock())
            s->on_confirm(seq, ack, multiple);
    });
    publisher_.on_close([self](const close_reason&) {
        // Confirms of a closed channel never come: their outcome is unknown. The next
        // publish opens a new channel.
        auto s = self.lock();
        if (!s)
            return;
        s->fail_pending(errc::outcome_unknown);
        // A channel error took the reply consumer with it: consume replies again on a new
        // publishing channel (posted: the close happens inside a broker operation). A lost
        // connection is left to `connect`.
        if (s->reply_sub_)
            boost::asio::post(s->executor(), [self] {
                auto s2 = self.lock();
                if (!s2 || s2->closed_ || !s2->conn_.is_open() || !s2->reply_sub_ ||
                    (s2->publisher_.is_open() && s2->reply_sub_->ch.id() == s2->publisher_.id()))
                    return;
                if (s2->subscribe(s2->reply_sub_)) {
                    s2->subscriptions_.erase(s2->reply_sub_->options.consumer_tag);
                    s2->reply_sub_.reset();
                }
            });
    });
}

LETTERBOX_DECL void transport_state::add_pending(std::uint64_t seq, completion done) {
    if (pending_.empty() || pending_.back().seq < seq) {
        pending_.push_back(pending_publish{seq, std::move(done), false});
        return;
    }
    auto it = std::lower_bound(pending_.begin(), pending_.end(), seq,
                               [](const pending_publish& p, std::uint64_t s) { return p.seq < s; });
    if (it == pending_.end() || it->seq != seq)
        pending_.insert(it, pending_publish{seq, std::move(done), false});
}

LETTERBOX_DECL transport_state::pending_list::iterator
transport_state::find_pending(std::uint64_t seq) {
    if (!pending_.empty() && pending_.front().seq == seq)
        return pending_.begin();
    auto it = std::lower_bound(pending_.begin(), pending_.end(), seq,
                               [](const pending_publish& p, std::uint64_t s) { return p.seq < s; });
    return it != pending_.end() && it->seq == seq ? it : pending_.end();
}

// Takes out the publishes the confirm settles (`seq` alone, or every one up to it when
// `multiple`), then completes them in sequence order, as `detail::take_confirmed` does for a
// map.
LETTERBOX_DECL void transport_state::on_confirm(std::uint64_t seq, bool ack, bool multiple) {
    if (!multiple) {
        auto it = find_pending(seq);
        if (it == pending_.end())
            return;
        auto p = std::move(*it);
        pending_.erase(it);
        p.done(letterbox::detail::confirm_outcome(ack, p.returned));
        return;
    }
    const auto last =
        std::upper_bound(pending_.begin(), pending_.end(), seq,
                         [](std::uint64_t s, const pending_publish& p) { return s < p.seq; });
    std::vector<pending_publish> taken(std::make_move_iterator(pending_.begin()),
                                       std::make_move_iterator(last));
    pending_.erase(pending_.begin(), last);
    for (auto& p : taken)
        p.done(letterbox::detail::confirm_outcome(ack, p.returned));
}

LETTERBOX_DECL void transport_state::fail_pending(errc e) {
    pending_list keep;
    if (in_flight_ != 0) {
        if (auto it = find_pending(in_flight_); it != pending_.end()) {
            keep.push_back(std::move(*it));
            pending_.erase(it);
        }
    }
    auto pending = std::move(pending_);
    pending_ = std::move(keep);
    for (auto& p : pending)
        p.done(e);
}

LETTERBOX_DECL void transport_state::on_connection_lost() {
    connected_.store(false, std::memory_order_release);
    fail_pending(errc::outcome_unknown);
    if (closed_)
        return;
    disconnect_watchers_.notify({});
    std::weak_ptr<transport_state> self = weak_from_this();
    boost::asio::post(executor(), [self] {
        if (auto s = self.lock())
            s->ensure_open();
    });
}

LETTERBOX_DECL std::function<void(const basic_delivery&)>
transport_state::delivery_callback(const std::shared_ptr<subscription>& p) {
    std::weak_ptr<transport_state> self = weak_from_this();
    std::weak_ptr<subscription> weak_sub = p;
    return [self, weak_sub](const basic_delivery& d) {
        // Only whether the transport is still there: it is not held during the call.
        if (self.expired())
            return;
        auto sp = weak_sub.lock();
        if (!sp || !sp->on_delivery)
            return;
        if (sp->started)
            sp->on_delivery(d.to_delivery());
        else
            sp->pending.push_back(d.to_delivery());
    };
}

LETTERBOX_DECL std::error_code transport_state::subscribe(const std::shared_ptr<subscription>& p) {
    auto& sub = *p;
    if (sub.options.queue == topology::direct_reply_to) {
        // Direct reply-to: RabbitMQ takes a request naming the pseudo-queue as its reply_to
        // only on the channel that consumes it, so replies are consumed on the publishing
        // channel (without acknowledgements, as the broker requires).
        if (!publisher_.is_open())
            open_publisher();
        sub.ch = publisher_;
        channels_[sub.ch.id()] = sub.ch;
        std::error_code ec;
        in_memory::basic_consume_options opts{sub.options.consumer_tag, sub.options.no_ack,
                                              sub.options.exclusive, sub.options.arguments};
        auto tag =
            sub.ch.basic_consume(sub.options.queue, delivery_callback(p), ec, std::move(opts));
        if (!ec)
            sub.options.consumer_tag = tag;
        return ec;
    }
    sub.ch = conn_.open_channel();
    channels_[sub.ch.id()] = sub.ch;
    {
        std::weak_ptr<transport_state> self = weak_from_this();
        std::weak_ptr<subscription> weak_sub = p;
        sub.ch.on_close([self, weak_sub, id = sub.ch.id()](const close_reason& why) {
            // Posted: the close happens inside the broker operation that caused it.
            if (auto s = self.lock()) {
                s->count_close(why);
                boost::asio::post(s->executor(), [self, weak_sub, id] {
                    auto s2 = self.lock();
                    auto sp = weak_sub.lock();
                    if (s2 && sp)
                        s2->on_consumer_channel_closed(sp, id);
                });
            }
        });
    }
    auto ec = sub.ch.basic_qos(sub.options.prefetch);
    if (ec)
        return ec;
    in_memory::basic_consume_options opts{sub.options.consumer_tag, sub.options.no_ack,
                                          sub.options.exclusive, sub.options.arguments};
    std::weak_ptr<transport_state> self = weak_from_this();
    auto tag = sub.ch.basic_consume(sub.options.queue, delivery_callback(p), ec, std::move(opts),
                                    [self](const std::string& t) {
                                        if (auto s = self.lock())
                                            s->on_broker_cancel(t);
                                    });
    if (!ec)
        sub.options.consumer_tag = tag;
    return ec;
}

LETTERBOX_DECL void transport_state::count_close(const close_reason& why) noexcept {
    if (letterbox::detail::is_consumer_timeout(why.code, why.text))
        consumer_timeouts_.fetch_add(1, std::memory_order_relaxed);
}

LETTERBOX_DECL void transport_state::retire(channel& ch) {
    if (ch.is_open() && ch.unacked_count() != 0) {
        retired_.insert(ch.id());
        return;
    }
    retired_.erase(ch.id());
    channels_.erase(ch.id());
    if (ch.is_open())
        ch.close();
}

} // namespace letterbox::in_memory::detail
