// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/topology/queue.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>

#include <cstddef>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// Declares `queues` one after the other on `t` and completes with
/// `void(std::error_code)`: the first failure (nothing after it is declared), or success.
/// Declaring is idempotent, so it is safe on every start (see `retry_topology::queues`).
template <transport Transport, class Token>
auto async_declare_all(Transport& t, std::vector<queue> queues, Token&& token) {
    return boost::asio::async_initiate<Token, void(std::error_code)>(
        [&t](auto handler, std::vector<queue> qs) {
            struct op {
                Transport* t;
                std::vector<queue> qs;
                std::size_t next = 0;
                decltype(handler) done;
                static void step(std::shared_ptr<op> self, std::error_code ec) {
                    if (ec || self->next == self->qs.size()) {
                        auto ex = boost::asio::get_associated_executor(self->done,
                                                                       self->t->get_executor());
                        return boost::asio::dispatch(
                            ex, [h = std::move(self->done), ec]() mutable { std::move(h)(ec); });
                    }
                    const auto& q = self->qs[self->next++];
                    self->t->async_declare(q, [self](std::error_code e) { step(self, e); });
                }
            };
            auto o = std::make_shared<op>(op{&t, std::move(qs), 0, std::move(handler)});
            op::step(std::move(o), {});
        },
        token, std::move(queues));
}

} // namespace letterbox::topology
