// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/topology/declaration.hpp>
#include <letterbox/topology/queue.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <cstddef>
#include <memory>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// Declares `items` (exchanges, queues and bindings) one after the other on `t`, in their
/// order, and completes with `void(error_code)`: the first failure (nothing after it is
/// declared), or success. Declaring is idempotent, so it is safe on every start (see
/// `retry_topology::queues`, `group_partitions::declarations`).
///
/// Cancellation (the token's cancellation slot): `terminal` and `partial`; the declaration
/// under way finishes, nothing after it is declared (what was declared stays: declaring is
/// idempotent), and the operation completes with `std::errc::operation_canceled`.
template <transport Transport, class Token>
auto async_declare_all(Transport& t, std::vector<declaration> items, Token&& token) {
    using signature = void(error_code);
    struct state {
        Transport* t;
        std::vector<declaration> items;
        std::size_t next = 0;
        bool cancelled = false;

        static void step(std::shared_ptr<state> self, letterbox::detail::async_op<signature> op,
                         std::error_code ec) {
            if (ec || self->next == self->items.size())
                return op(ec);
            if (self->cancelled)
                return op.cancelled();
            const auto& item = self->items[self->next++];
            auto then = [self, op](std::error_code e) mutable {
                step(std::move(self), std::move(op), e);
            };
            if (const auto* b = std::get_if<binding>(&item))
                return self->t->async_bind(*b, std::move(then));
            std::visit(
                [&](const auto& d) {
                    if constexpr (!std::is_same_v<std::decay_t<decltype(d)>, binding>)
                        self->t->async_declare(d, std::move(then));
                },
                item);
        }
    };
    return letterbox::detail::async_start<signature>(
        std::forward<Token>(token), t.get_executor(),
        [s = std::make_shared<state>(state{&t, std::move(items)})](
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

/// Declares `queues` one after the other on `t`: `async_declare_all` of the queues alone.
template <transport Transport, class Token>
auto async_declare_all(Transport& t, std::vector<queue> queues, Token&& token) {
    return async_declare_all(t, std::vector<declaration>(queues.begin(), queues.end()),
                             std::forward<Token>(token));
}

} // namespace letterbox::topology
