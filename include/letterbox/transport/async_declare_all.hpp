// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/topology/queue.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <cstddef>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// Declares `queues` one after the other on `t` and completes with
/// `void(error_code)`: the first failure (nothing after it is declared), or success.
/// Declaring is idempotent, so it is safe on every start (see `retry_topology::queues`).
///
/// Cancellation (the token's cancellation slot): `terminal` and `partial`; the declaration
/// under way finishes, nothing after it is declared (what was declared stays: declaring is
/// idempotent), and the operation completes with `std::errc::operation_canceled`.
template <transport Transport, class Token>
auto async_declare_all(Transport& t, std::vector<queue> queues, Token&& token) {
    using signature = void(error_code);
    struct state {
        Transport* t;
        std::vector<queue> qs;
        std::size_t next = 0;
        bool cancelled = false;

        static void step(std::shared_ptr<state> self, letterbox::detail::async_op<signature> op,
                         std::error_code ec) {
            if (ec || self->next == self->qs.size())
                return op(ec);
            if (self->cancelled)
                return op.cancelled();
            const auto& q = self->qs[self->next++];
            self->t->async_declare(q, [self, op](std::error_code e) mutable {
                step(std::move(self), std::move(op), e);
            });
        }
    };
    return letterbox::detail::async_start<signature>(
        std::forward<Token>(token), t.get_executor(),
        [s = std::make_shared<state>(state{&t, std::move(queues)})](
            letterbox::detail::async_op<signature> op) mutable {
            op.on_cancel(
                [weak = std::weak_ptr<state>(s)](auto) {
                    if (auto st = weak.lock())
                        st->cancelled = true;
                },
                boost::asio::cancellation_type::terminal | boost::asio::cancellation_type::partial);
            state::step(std::move(s), std::move(op), {});
        });
}

} // namespace letterbox::topology
