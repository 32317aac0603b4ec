// SPDX-License-Identifier: BSL-1.0
//
// `flaky_link<Transport>`: the enrollment service's path to the broker, with the two network
// faults of the incident injected on demand. It models `letterbox::transport` by forwarding
// every operation to the real transport, except publishes:
//
// - `cut()` ... `restore()`: the broker is unreachable from the service (a failover seen from
//   the service's side): every publish fails at once with `errc::connection_closed`, nothing
//   reaches the broker. Used on RabbitMQ, where the demo cannot take the broker down; with the
//   in-memory broker the demo takes the whole broker down instead (`broker::go_down`).
// - `lose_confirm_if(predicate)`: the broker stores the message, but its confirm never reaches
//   the publisher (the connection dropped just after): the publish completes with
//   `errc::outcome_unknown`. A publisher that tries again sends a second copy: a duplicate.
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <system_error>
#include <utility>

namespace demo {

template <letterbox::transport Transport>
class flaky_link {
public:
    using transport_concept = letterbox::transport_tag;
    using executor_type = typename Transport::executor_type;

    explicit flaky_link(Transport& inner)
        : inner_(&inner) {}

    executor_type get_executor() const { return inner_->get_executor(); }

    // -- faults --------------------------------------------------------------------------------
    void cut() { cut_ = true; }
    void restore() { cut_ = false; }
    /// The messages whose confirm is lost: `predicate` is asked once per publish.
    void lose_confirm_if(std::function<bool(const letterbox::message&)> predicate) {
        lose_confirm_ = std::move(predicate);
    }

    /// Publishes the broker stored (confirmed, or whose confirm was lost on purpose).
    std::uint64_t stored() const noexcept { return stored_; }
    std::uint64_t confirms_lost() const noexcept { return confirms_lost_; }

    // -- the transport -------------------------------------------------------------------------
    template <class Token>
    auto async_publish(const letterbox::message& m, Token&& token) {
        return boost::asio::async_initiate<Token, void(std::error_code)>(
            [this, m](auto handler) {
                auto ex = boost::asio::get_associated_executor(handler, get_executor());
                if (cut_) {
                    boost::asio::post(ex, [h = std::move(handler)]() mutable {
                        std::move(h)(make_error_code(letterbox::errc::connection_closed));
                    });
                    return;
                }
                const bool lose = lose_confirm_ && lose_confirm_(m);
                inner_->async_publish(
                    m, boost::asio::bind_executor(
                           ex, [this, lose, h = std::move(handler)](std::error_code ec) mutable {
                               if (!ec)
                                   ++stored_;
                               if (!ec && lose) {
                                   ++confirms_lost_;
                                   ec = make_error_code(letterbox::errc::outcome_unknown);
                               }
                               std::move(h)(ec);
                           }));
            },
            token);
    }

    template <class Token>
    auto async_declare(const letterbox::topology::exchange& x, Token&& token) {
        return inner_->async_declare(x, std::forward<Token>(token));
    }
    template <class Token>
    auto async_declare(const letterbox::topology::queue& q, Token&& token) {
        return inner_->async_declare(q, std::forward<Token>(token));
    }
    template <class Token>
    auto async_bind(const letterbox::topology::binding& b, Token&& token) {
        return inner_->async_bind(b, std::forward<Token>(token));
    }
    template <class OnDelivery, class Token>
    auto async_consume(const letterbox::consume_options& o, OnDelivery&& on_delivery,
                       Token&& token) {
        return inner_->async_consume(o, std::forward<OnDelivery>(on_delivery),
                                     std::forward<Token>(token));
    }
    template <class Token>
    auto async_cancel(const std::string& tag, Token&& token) {
        return inner_->async_cancel(tag, std::forward<Token>(token));
    }
    template <class Token>
    auto async_ack(const letterbox::delivery& d, Token&& token) {
        return inner_->async_ack(d, std::forward<Token>(token));
    }
    template <class Token>
    auto async_nack(const letterbox::delivery& d, bool requeue, Token&& token) {
        return inner_->async_nack(d, requeue, std::forward<Token>(token));
    }
    template <class Token>
    auto async_reject(const letterbox::delivery& d, bool requeue, Token&& token) {
        return inner_->async_reject(d, requeue, std::forward<Token>(token));
    }
    template <class Token>
    auto async_close(Token&& token) {
        return inner_->async_close(std::forward<Token>(token));
    }

private:
    Transport* inner_;
    bool cut_ = false;
    std::function<bool(const letterbox::message&)> lose_confirm_{};
    std::uint64_t stored_ = 0;
    std::uint64_t confirms_lost_ = 0;
};

} // namespace demo
