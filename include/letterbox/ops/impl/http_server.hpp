// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of http_server (included by http_server.hpp).

#include <letterbox/config.hpp>
#include <letterbox/ops/http_server.hpp>

#include <letterbox/error.hpp>
#include <letterbox/ops/detail/dlq_endpoint.hpp>
#include <letterbox/ops/detail/outbox_endpoint.hpp>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

inline http_server::http_server(executor_type ex, http_server_options options)
    : state_(std::make_shared<detail::server_state>(std::move(ex), std::move(options))) {}

inline http_server::~http_server() {
    stop();
    // A store call still running uses the store, which may go right after the server: wait
    // for it (bounded by the store's own busy timeout).
    state_->shutdown_store();
}

inline void http_server::check_not_listening() const {
    if (state_->listening() || state_->stopped())
        throw letterbox::error(errc::invalid_state,
                               "http_server: register before listen() and stop()");
}

template <queue_reader Transport>
void http_server::add_dead_letter_queue(Transport& transport, std::string queue,
                                        dlq::dead_letter_queue_options options) {
    check_not_listening();
    state_->add_dlq(std::make_shared<detail::dlq_endpoint_for<Transport>>(
        transport, std::move(queue), std::move(options), state_->strand()));
}

template <outbox_store Store, clock Clock>
void http_server::set_outbox(Store& store, Clock& clock) {
    check_not_listening();
    state_->set_outbox(std::make_shared<detail::outbox_endpoint_for<Store, Clock>>(store, clock));
}

inline void http_server::set_metrics(std::function<std::string()> render) {
    check_not_listening();
    state_->set_metrics(std::move(render));
}

inline void http_server::set_message_trail(const message_trail& trail) {
    check_not_listening();
    state_->set_conversations([&trail](std::string_view id) { return trail.conversation(id); });
}

inline void http_server::add_readiness_check(std::string name, std::function<readiness()> check) {
    check_not_listening();
    state_->add_check(std::move(name), std::move(check));
}

template <relay_counters_source Relay>
void http_server::watch_relay(const Relay& relay) {
    check_not_listening();
    state_->set_relay([r = &relay]() -> relay_counters { return r->counters(); });
}

inline void http_server::watch_consumers(const letterbox_metrics& metrics) {
    check_not_listening();
    state_->set_consumers([m = &metrics] { return m->consumers(); });
}

inline void http_server::set_topology_check(std::function<std::vector<lint::finding>()> check) {
    check_not_listening();
    state_->set_topology_check(std::move(check));
}

inline std::error_code http_server::listen() {
    return state_->listen();
}

inline boost::asio::ip::tcp::endpoint http_server::local_endpoint() const {
    return state_->local_endpoint();
}

inline void http_server::stop() {
    state_->stop();
}

} // namespace letterbox::ops
