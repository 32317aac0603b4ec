// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of transport_state (included by transport_state.hpp): the connection and its
// recovery. The other members are defined by concern next to this file:
// transport_state_topology.hpp (channels and topology), transport_state_publishing.hpp,
// transport_state_consuming.hpp and transport_state_settling.hpp (settling and basic.get).

#include <letterbox/amqp/broker_info.hpp>
#include <letterbox/amqp/detail/transport_state.hpp>
#include <letterbox/amqp/transport_event.hpp>
#include <letterbox/config.hpp>

#include <letterbox/error.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

// ---- connection and recovery ---------------------------------------------------------------

LETTERBOX_DECL void transport_state::with_connection(completion then) {
    if (closed_)
        return then(make_error_code(errc::closed));
    if (phase_ == phase::open && conn_ && conn_->is_open())
        return then({});
    // It waits for the round of attempts in progress, or the one the backoff has scheduled (at
    // most reconnect_delay_max away), and completes when a connection opens or when every
    // endpoint of the round failed: callers retrying in a loop never make the transport hammer
    // brokers that are down.
    waiters_.push_back(std::move(then));
}

LETTERBOX_DECL void transport_state::connect_now() {
    if (closed_)
        return;
    phase_ = phase::connecting;
    const auto generation = ++generation_;
    current_endpoint_ = next_endpoint_;
    next_endpoint_ = (next_endpoint_ + 1) % endpoints_.size();
    ++attempts_in_round_;
    // One connection reaches one endpoint: the URL's own host and port are replaced, so that
    // TLS checks (and sends in SNI) that endpoint's host unless server_name_indication says.
    url target = url_;
    target.host = endpoints_[current_endpoint_].host;
    target.port = endpoints_[current_endpoint_].port;
    target.more_endpoints.clear();
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
    conn_->connect(target, [weak, generation](std::error_code ec) {
        if (auto self = weak.lock())
            self->on_connected(generation, ec);
    });
}

LETTERBOX_DECL void transport_state::on_connected(std::uint64_t generation, std::error_code ec) {
    if (generation != generation_ || closed_)
        return;
    if (ec) {
        // Waiting operations fail once a whole round failed, not at each endpoint refused.
        if (attempts_in_round_ >= endpoints_.size())
            fail_waiters(
                ec.category() == error_category() ? ec : make_error_code(errc::connection_closed));
        return schedule_reconnect();
    }
    delay_ = options_.reconnect_delay_min;
    phase_ = phase::recovering;
    identify_broker();
    recover_topology(0);
}

LETTERBOX_DECL void transport_state::identify_broker() {
    auto now = broker_info::from_server_properties(conn_->server_properties());
    std::optional<broker_info> before;
    {
        const std::lock_guard<std::mutex> lock(broker_mutex_);
        before = std::exchange(broker_, now);
    }
    if (!options_.on_event)
        return;
    // The observer runs on a stack of its own: whatever it starts on the transport comes after
    // this step, as any operation would.
    boost::asio::post(strand_, [self = shared_from_this(), now = std::move(now),
                                before = std::move(before), at = endpoints_[current_endpoint_]] {
        if (self->closed_ || !self->options_.on_event)
            return;
        const auto report = [&](transport_event::kind what, const std::string& text,
                                const broker_info* previous) {
            try {
                self->options_.on_event(transport_event{what, now, at, previous, text});
            } catch (...) { // an observer that throws cannot stop the transport
            }
        };
        report(transport_event::kind::broker_identified,
               "connected to " + now.describe() + " at " + at.to_string(), nullptr);
        if (!now.exact)
            report(transport_event::kind::broker_version_not_recognised, now.note, nullptr);
        if (before && (before->version != now.version || before->product != now.product))
            report(transport_event::kind::broker_version_changed,
                   "the broker at " + at.to_string() + " is " + now.describe() +
                       ", and the previous connection's was " + before->describe(),
                   &*before);
    });
}

LETTERBOX_DECL void transport_state::recover_topology(std::size_t next) {
    if (!connection_usable())
        return;
    if (next == declared_.size()) {
        // The reply consumer comes back with the next publishing channel (setup_publisher).
        std::vector<std::shared_ptr<subscription>> subs;
        for (auto& [tag, sub] : subscriptions_)
            if (!sub->subscribing && sub != reply_sub_)
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

LETTERBOX_DECL void
transport_state::recover_consumers(std::vector<std::shared_ptr<subscription>> subs,
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

LETTERBOX_DECL void transport_state::opened() {
    phase_ = phase::open;
    connected_endpoint_.store(current_endpoint_ + 1, std::memory_order_release);
    connected_.store(true, std::memory_order_release);
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiters)
        w({});
    pump();
}

LETTERBOX_DECL void transport_state::fail_waiters(std::error_code ec) {
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiters)
        w(ec);
}

LETTERBOX_DECL void transport_state::on_connection_lost(std::uint64_t generation,
                                                        std::error_code ec) {
    if (generation != generation_ || closed_)
        return;
    (void)ec;
    set_disconnected();
    // Nothing sent and unconfirmed is replayed: the caller decides (outcome_unknown).
    fail_unconfirmed(make_error_code(errc::outcome_unknown));
    fail_outbox(make_error_code(errc::connection_closed));
    fail_waiters(make_error_code(errc::connection_closed));
    disconnect_watchers_.notify({});
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

LETTERBOX_DECL void transport_state::schedule_reconnect() {
    if (closed_)
        return;
    phase_ = phase::backoff;
    set_disconnected();
    // The next endpoint at once while the round lasts (a failed connect or a lost connection
    // moves on to the next node); the backoff only once every endpoint had its attempt. A
    // round counts connections that opened too, so endpoints that accept and then drop every
    // connection still get the backoff between rounds instead of a busy loop.
    auto wait = std::chrono::milliseconds{0};
    if (attempts_in_round_ >= endpoints_.size()) {
        attempts_in_round_ = 0;
        wait = delay_;
        delay_ = std::min(delay_ * 2, options_.reconnect_delay_max);
    }
    // Through the timer even without a wait: the connection that ended is still on the stack.
    timer_.expires_after(wait);
    const auto generation = generation_;
    timer_.async_wait([weak = weak_from_this(), generation](std::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->generation_ != generation || self->phase_ != phase::backoff)
            return;
        self->connect_now();
    });
}

LETTERBOX_DECL void transport_state::drop_connection() {
    if (conn_)
        conn_->abort(make_error_code(errc::connection_closed));
}

LETTERBOX_DECL std::uint64_t transport_state::watch_disconnect(completion f) {
    if (closed_) {
        boost::asio::post(strand_,
                          [f = std::move(f)]() mutable { f(make_error_code(errc::closed)); });
        return 0;
    }
    return disconnect_watchers_.add(std::move(f));
}

LETTERBOX_DECL void transport_state::close(completion done) {
    if (closed_) {
        if (conn_ && conn_->current_state() != connection_core::state::closed) {
            close_waiters_.push_back(std::move(done));
            return;
        }
        return done({});
    }
    closed_ = true;
    phase_ = phase::closed;
    set_disconnected();
    timer_.cancel();
    // Acks accepted before the close go out before connection.close.
    for (auto& [uid, entry] : channels_)
        if (!entry.acks.empty() && entry.ch->is_open())
            flush_acks(uid);
    fail_unconfirmed(make_error_code(errc::outcome_unknown));
    fail_outbox(make_error_code(errc::outcome_unknown));
    fail_waiters(make_error_code(errc::closed));
    disconnect_watchers_.notify(make_error_code(errc::closed));
    subscriptions_.clear();
    reply_sub_.reset();
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

} // namespace letterbox::amqp::detail
