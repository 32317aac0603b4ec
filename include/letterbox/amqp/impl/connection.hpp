// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of amqp::connection (included by connection.hpp).

#include <letterbox/amqp/connection.hpp>
#include <letterbox/config.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

inline connection::~connection() {
    if (core_)
        boost::asio::dispatch(core_->strand(),
                              [c = core_] { c->abort(make_error_code(errc::closed)); });
}

template <class Signature, class Token, class Op>
auto connection::run(Token&& token, Op op) {
    return boost::asio::async_initiate<Token, Signature>(
        [c = core_, ex = ex_](auto handler, Op op) {
            auto hex = boost::asio::get_associated_executor(handler, ex);
            boost::asio::post(c->strand(),
                              [c, hex, op = std::move(op), h = std::move(handler)]() mutable {
                                  op(*c, [hex, h = std::move(h)](auto... args) mutable {
                                      boost::asio::post(hex, [h = std::move(h), args...]() mutable {
                                          std::move(h)(std::move(args)...);
                                      });
                                  });
                              });
        },
        token, std::move(op));
}

template <class Token>
auto connection::async_connect(const url& u, Token&& token) {
    return run<void(std::error_code)>(
        std::forward<Token>(token),
        [u](detail::connection_core& c, auto done) { c.connect(u, std::move(done)); });
}

template <class Token>
auto connection::async_close(Token&& token) {
    return run<void(std::error_code)>(
        std::forward<Token>(token),
        [](detail::connection_core& c, auto done) { c.close(std::move(done)); });
}

template <class Token>
auto connection::async_wait_closed(Token&& token) {
    return run<void(std::error_code)>(
        std::forward<Token>(token),
        [](detail::connection_core& c, auto done) { c.wait_closed(std::move(done)); });
}

template <class Token>
auto connection::async_info(Token&& token) {
    return run<void(std::error_code, info)>(
        std::forward<Token>(token), [](detail::connection_core& c, auto done) {
            if (!c.is_open())
                return done(make_error_code(errc::connection_closed), info{});
            done(std::error_code{}, info{c.frame_max(), c.channel_max(), c.heartbeat(), c.blocked(),
                                         c.server_properties()});
        });
}

} // namespace letterbox::amqp
