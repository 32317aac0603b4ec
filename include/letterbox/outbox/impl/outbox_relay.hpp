// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/outbox/outbox_relay.hpp; included at its end. The work is done by
// detail::relay_engine (letterbox/outbox/detail/relay_engine.hpp).

#include <letterbox/config.hpp>
#include <letterbox/error_code.hpp>
#include <letterbox/outbox/outbox_relay.hpp>

#include <letterbox/detail/async_op.hpp>
#include <letterbox/outbox/detail/relay_engine.hpp>
#include <letterbox/outbox/detail/relay_support.hpp>

#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

template <class OutboxStore, class Transport, class Clock>
outbox_relay<OutboxStore, Transport, Clock>::outbox_relay(OutboxStore& store, Transport& transport,
                                                          Clock& clock, relay_options options) {
    detail::check_relay_options(options);
    engine_ = std::make_shared<detail::relay_engine<OutboxStore, Transport, Clock>>(
        store, transport, clock, std::move(options));
}

template <class OutboxStore, class Transport, class Clock>
outbox_relay<OutboxStore, Transport, Clock>::~outbox_relay() {
    engine_->abort();
}

template <class OutboxStore, class Transport, class Clock>
auto outbox_relay<OutboxStore, Transport, Clock>::get_executor() const noexcept -> executor_type {
    return engine_->executor();
}

template <class OutboxStore, class Transport, class Clock>
const std::string& outbox_relay<OutboxStore, Transport, Clock>::owner() const noexcept {
    return engine_->owner();
}

template <class OutboxStore, class Transport, class Clock>
template <class Token>
auto outbox_relay<OutboxStore, Transport, Clock>::async_run(Token&& token) {
    using signature = void(error_code);
    return detail::async_start<signature, detail::outstanding_work::untracked>(
        std::forward<Token>(token), engine_->executor(),
        [weak = std::weak_ptr(engine_)](detail::async_op<signature> op) {
            auto engine = weak.lock();
            if (!engine)
                return op(errc::closed); // the relay was destroyed before it could start
            op.on_cancel([weak](auto) {
                if (auto e = weak.lock())
                    e->cancel_run();
            });
            engine->start(op);
        });
}

template <class OutboxStore, class Transport, class Clock>
void outbox_relay<OutboxStore, Transport, Clock>::wake() {
    engine_->post_wake();
}

template <class OutboxStore, class Transport, class Clock>
std::function<void()> outbox_relay<OutboxStore, Transport, Clock>::waker() const {
    return engine_->waker();
}

template <class OutboxStore, class Transport, class Clock>
void outbox_relay<OutboxStore, Transport, Clock>::stop() {
    engine_->post_stop();
}

template <class OutboxStore, class Transport, class Clock>
relay_counters outbox_relay<OutboxStore, Transport, Clock>::counters() const noexcept {
    return engine_->counters();
}

} // namespace letterbox
