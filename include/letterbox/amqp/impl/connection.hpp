// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of amqp::connection (included by connection.hpp).

#include <letterbox/amqp/connection.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/error_code.hpp>

#include <boost/asio/dispatch.hpp>

#include <memory>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

inline connection::~connection() {
    if (core_)
        boost::asio::dispatch(core_->strand(),
                              [c = core_] { c->abort(make_error_code(errc::closed)); });
}

// Every operation, through the operation base (letterbox/detail/async_op.hpp): `op(core,
// done)` runs on the strand; a `terminal` cancellation completes it with `operation_canceled`
// unless the operation says otherwise.
template <class Signature, class Token, class Op>
auto connection::run(Token&& token, Op op) {
    return letterbox::detail::async_start_with<
        Signature, letterbox::detail::unregistered_cancel::completes_cancelled>(
        std::forward<Token>(token), core_->strand(), ex_, core_, std::move(op));
}

template <class Token>
auto connection::async_connect(const url& u, Token&& token) {
    return run<void(error_code)>(
        std::forward<Token>(token), [u](detail::connection_core& c, auto done) {
            // A connection half made is no use to anyone: cancelling aborts it.
            done.on_cancel([c = c.shared_from_this()](auto cancelled) {
                cancelled.cancelled();
                c->abort(std::make_error_code(std::errc::operation_canceled));
            });
            c.connect(u, std::move(done));
        });
}

template <class Token>
auto connection::async_close(Token&& token) {
    return run<void(error_code)>(
        std::forward<Token>(token),
        [](detail::connection_core& c, auto done) { c.close(std::move(done)); });
}

template <class Token>
auto connection::async_wait_closed(Token&& token) {
    return run<void(error_code)>(
        std::forward<Token>(token),
        [](detail::connection_core& c, auto done) { c.wait_closed(std::move(done)); });
}

template <class Token>
auto connection::async_info(Token&& token) {
    return run<void(error_code, info)>(
        std::forward<Token>(token), [](detail::connection_core& c, auto done) {
            if (!c.is_open())
                return done(make_error_code(errc::connection_closed), info{});
            done(std::error_code{}, info{c.frame_max(), c.channel_max(), c.heartbeat(), c.blocked(),
                                         c.server_properties()});
        });
}

} // namespace letterbox::amqp
