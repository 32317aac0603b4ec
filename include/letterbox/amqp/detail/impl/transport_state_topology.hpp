// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of transport_state (included by transport_state.hpp): the channels opened on
// first use, and the topology (declarations, their record for the recovery, queue depth).

#include <letterbox/amqp/detail/transport_state.hpp>
#include <letterbox/config.hpp>

#include <letterbox/error.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

// ---- channels and topology -----------------------------------------------------------------

LETTERBOX_DECL void transport_state::acquire(const std::shared_ptr<lazy_channel>& lc,
                                             channel_setup setup, channel_ready done) {
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

LETTERBOX_DECL void transport_state::admin_call(codec::method m, channel_core::reply_filter filter,
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

LETTERBOX_DECL void transport_state::declare_now(const declaration& d, completion done) {
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

LETTERBOX_DECL void transport_state::record(const declaration& d) {
    // A server-named queue cannot be declared again under its name: not recorded.
    if (const auto* q = std::get_if<topology::queue>(&d); q && q->name.empty())
        return;
    if (std::find(declared_.begin(), declared_.end(), d) == declared_.end())
        declared_.push_back(d);
}

LETTERBOX_DECL void transport_state::declare_and_record(declaration d, completion done) {
    with_connection([self = shared_from_this(), d = std::move(d),
                     done = std::move(done)](std::error_code ec) mutable {
        if (ec)
            return done(ec);
        self->declare_now(d, [self, d, done = std::move(done)](std::error_code e) mutable {
            if (!e)
                self->record(d);
            done(e);
        });
    });
}

LETTERBOX_DECL void transport_state::declare(const topology::exchange& x, completion done) {
    declare_and_record(x, std::move(done));
}

LETTERBOX_DECL void transport_state::declare(const topology::queue& q, completion done) {
    declare_and_record(q, std::move(done));
}

LETTERBOX_DECL void transport_state::bind(const topology::binding& b, completion done) {
    declare_and_record(b, std::move(done));
}

LETTERBOX_DECL void transport_state::depth(const std::string& queue, depth_completion done) {
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

} // namespace letterbox::amqp::detail
