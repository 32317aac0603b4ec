// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of amqp::transport (included by transport.hpp).

#include <letterbox/amqp/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/error_code.hpp>

#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

// Every operation, through the operation base (letterbox/detail/async_op.hpp): `op(state,
// done)` runs on the strand, `done` completes the operation on the handler's associated executor
// (the transport's executor by default). Unless the operation says otherwise, a `terminal`
// cancellation completes it at once with `operation_canceled`; the broker may still carry out
// the request, whose reply is then ignored.
template <class Signature, class Token, class Op>
auto transport::run(Token&& token, Op op) {
    return letterbox::detail::async_start_with<
        Signature, letterbox::detail::unregistered_cancel::completes_cancelled>(
        std::forward<Token>(token), state_->strand(), ex_, state_, std::move(op));
}

template <class Token>
auto transport::async_consume(const consume_options& o, std::function<void(delivery)> on_delivery,
                              Token&& token) {
    using signature = void(error_code, std::string);
    return run<signature>(
        std::forward<Token>(token),
        [o, cb = std::move(on_delivery)](detail::transport_state& s,
                                         letterbox::detail::async_op<signature> done) mutable {
            s.consume(std::move(o), std::move(cb),
                      [s = s.shared_from_this(),
                       done](std::error_code ec,
                             std::shared_ptr<detail::transport_state::subscription> sub) {
                          std::string tag = sub ? sub->options.consumer_tag : std::string();
                          if (done.done()) {
                              // Cancelled while waiting for consume-ok: nobody has the tag,
                              // so the consumer it started is cancelled again.
                              if (sub)
                                  s->cancel(tag, [](std::error_code) {});
                              return;
                          }
                          // Deliveries wait until the completion has run (the concept).
                          done.complete_then(
                              [s, sub] {
                                  if (sub)
                                      s->start_delivering(sub);
                              },
                              ec, std::move(tag));
                      });
        });
}

} // namespace letterbox::amqp
