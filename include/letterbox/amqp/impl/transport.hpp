// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of amqp::transport (included by transport.hpp).

#include <letterbox/amqp/transport.hpp>
#include <letterbox/config.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <tuple>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

// Posts `op(state, done)` to the strand; `done(args...)` posts the completion to the handler's
// associated executor (the transport's executor by default).
template <class Signature, class Token, class Op>
auto transport::run(Token&& token, Op op) {
    return boost::asio::async_initiate<Token, Signature>(
        [s = state_, ex = ex_](auto handler, Op op) {
            auto hex = boost::asio::get_associated_executor(handler, ex);
            boost::asio::post(s->strand(), [s, hex, op = std::move(op),
                                            h = std::move(handler)]() mutable {
                op(*s, [hex, h = std::move(h)](auto... args) mutable {
                    boost::asio::post(hex, [h = std::move(h),
                                            args = std::make_tuple(std::move(args)...)]() mutable {
                        std::apply(std::move(h), std::move(args));
                    });
                });
            });
        },
        token, std::move(op));
}

template <class Token>
auto transport::async_consume(const consume_options& o, std::function<void(delivery)> on_delivery,
                              Token&& token) {
    return boost::asio::async_initiate<Token, void(std::error_code, std::string)>(
        [s = state_, ex = ex_](auto handler, consume_options o, std::function<void(delivery)> cb) {
            auto hex = boost::asio::get_associated_executor(handler, ex);
            boost::asio::post(s->strand(), [s, hex, o = std::move(o), cb = std::move(cb),
                                            h = std::move(handler)]() mutable {
                s->consume(std::move(o), std::move(cb),
                           [s, hex, h = std::move(h)](
                               std::error_code ec,
                               std::shared_ptr<detail::transport_state::subscription> sub) mutable {
                               std::string tag = sub ? sub->options.consumer_tag : std::string();
                               // Deliveries wait until the completion has run (the concept).
                               boost::asio::post(hex, [s, sub, h = std::move(h), ec,
                                                       tag = std::move(tag)]() mutable {
                                   std::move(h)(ec, std::move(tag));
                                   if (sub)
                                       boost::asio::dispatch(
                                           s->strand(), [s, sub] { s->start_delivering(sub); });
                               });
                           });
            });
        },
        token, o, std::move(on_delivery));
}

} // namespace letterbox::amqp
