// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/outbox/outbox_relay.hpp; included at its end. The work is done by
// detail::relay_engine (letterbox/outbox/detail/relay_engine.hpp).

#include <letterbox/config.hpp>
#include <letterbox/outbox/outbox_relay.hpp>

#include <letterbox/detail/unique_function.hpp>
#include <letterbox/outbox/detail/relay_engine.hpp>
#include <letterbox/outbox/detail/relay_support.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>

#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

template <outbox_store OutboxStore, transport Transport, clock Clock>
outbox_relay<OutboxStore, Transport, Clock>::outbox_relay(OutboxStore& store, Transport& transport,
                                                          Clock& clock, relay_options options) {
    detail::check_relay_options(options);
    engine_ = std::make_shared<detail::relay_engine<OutboxStore, Transport, Clock>>(
        store, transport, clock, std::move(options));
}

template <outbox_store OutboxStore, transport Transport, clock Clock>
outbox_relay<OutboxStore, Transport, Clock>::~outbox_relay() {
    engine_->abort();
}

template <outbox_store OutboxStore, transport Transport, clock Clock>
auto outbox_relay<OutboxStore, Transport, Clock>::get_executor() const noexcept -> executor_type {
    return engine_->executor();
}

template <outbox_store OutboxStore, transport Transport, clock Clock>
const std::string& outbox_relay<OutboxStore, Transport, Clock>::owner() const noexcept {
    return engine_->owner();
}

template <outbox_store OutboxStore, transport Transport, clock Clock>
template <class Token>
auto outbox_relay<OutboxStore, Transport, Clock>::async_run(Token&& token) {
    return boost::asio::async_initiate<Token, void(std::error_code)>(
        [engine = engine_](auto handler) {
            auto ex = boost::asio::get_associated_executor(handler, engine->executor());
            detail::unique_function<void(std::error_code)> done = [h = std::move(handler),
                                                                   ex](std::error_code ec) mutable {
                boost::asio::post(ex, [h = std::move(h), ec]() mutable { std::move(h)(ec); });
            };
            engine->post_start(std::move(done));
        },
        token);
}

template <outbox_store OutboxStore, transport Transport, clock Clock>
void outbox_relay<OutboxStore, Transport, Clock>::wake() {
    engine_->post_wake();
}

template <outbox_store OutboxStore, transport Transport, clock Clock>
std::function<void()> outbox_relay<OutboxStore, Transport, Clock>::waker() const {
    return engine_->waker();
}

template <outbox_store OutboxStore, transport Transport, clock Clock>
void outbox_relay<OutboxStore, Transport, Clock>::stop() {
    engine_->post_stop();
}

template <outbox_store OutboxStore, transport Transport, clock Clock>
relay_counters outbox_relay<OutboxStore, Transport, Clock>::counters() const noexcept {
    return engine_->counters();
}

} // namespace letterbox
