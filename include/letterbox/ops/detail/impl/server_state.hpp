// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of server_state (included by server_state.hpp when header-only, by
// <letterbox/ops/src.hpp> under LETTERBOX_SEPARATE_COMPILATION): the options' checks, the accept
// loop with its room-making at the cap, and the registrations. The routes are defined next to
// this file: server_state_routes.hpp (dispatch, access, health and metrics),
// server_state_dlq.hpp and server_state_outbox.hpp.

#include <letterbox/config.hpp>
#include <letterbox/ops/detail/server_state.hpp>

#include <letterbox/error.hpp>
#include <letterbox/ops/detail/listen_address.hpp>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/socket_base.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

// ---- options, listening and accepting ---------------------------------------------------
LETTERBOX_DECL server_state::server_state(boost::asio::any_io_executor ex, http_server_options o)
    : strand_(boost::asio::make_strand(ex))
    , options_(std::move(o))
    , address_(route::parse_listen_address(options_.address))
    , acceptor_(strand_)
    , retry_(strand_)
    , sampler_(strand_)
    , samples_(options_.samples_kept) {
    const auto shown = address_.to_string();
    const bool loopback = route::is_loopback(address_);
    if (options_.max_connections == 0)
        throw letterbox::error(errc::invalid_argument,
                               "http_server_options::max_connections must be at least 1");
    if (options_.sample_interval < std::chrono::milliseconds{1})
        throw letterbox::error(errc::invalid_argument,
                               "http_server_options::sample_interval must be at least 1 ms");
    if (options_.samples_kept < 2)
        throw letterbox::error(errc::invalid_argument,
                               "http_server_options::samples_kept must be at least 2 (a "
                               "sparkline and a rate need two samples)");
    if (options_.loopback_reads_without_token && !loopback)
        throw letterbox::error(errc::invalid_argument,
                               "http_server_options::loopback_reads_without_token is only for a "
                               "loopback address, and " +
                                   shown +
                                   " is not one: set http_server_options::token and send it");
    if (!loopback && options_.token.empty()) {
        if (!options_.allow_non_loopback_without_token)
            throw letterbox::error(
                errc::invalid_argument,
                "http_server_options::address " + shown +
                    " is not a loopback address and http_server_options::token is empty: "
                    "anyone who reaches the port could read the queue names, the outbox rows "
                    "and the metrics. Set a token, listen on 127.0.0.1, or set "
                    "allow_non_loopback_without_token if a protected network stands in front "
                    "of the server");
        log("ops http: warning: listening on " + shown +
            " without a token (allow_non_loopback_without_token): the queue names, the outbox "
            "rows and the metrics are open to anyone who reaches the port; message bodies and "
            "mutations stay disabled");
    }
}

LETTERBOX_DECL std::error_code server_state::listen() {
    namespace ip = boost::asio::ip;
    if (listening_ || stopped())
        return make_error_code(errc::invalid_state);
    boost::system::error_code ec;
    const ip::tcp::endpoint ep{address_, options_.port};
    acceptor_.open(ep.protocol(), ec);
    if (!ec)
        acceptor_.set_option(boost::asio::socket_base::reuse_address(true), ec);
    if (!ec)
        acceptor_.bind(ep, ec);
    if (!ec)
        acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (!ec)
        endpoint_ = acceptor_.local_endpoint(ec);
    if (ec) {
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        log("ops http: cannot listen on " + address_.to_string() + " port " +
            std::to_string(options_.port) + ": " + ec.message());
        return ec;
    }
    listening_ = true;
    log("ops http: listening on " + endpoint_.address().to_string() + ":" +
        std::to_string(endpoint_.port()));
    boost::asio::dispatch(strand_, [self = shared_from_this()] { self->accept(); });
    if (relay_ || consumers_)
        boost::asio::dispatch(strand_, [self = shared_from_this()] { self->sample(); });
    return {};
}

LETTERBOX_DECL void server_state::accept() {
    if (stopped() || !acceptor_.is_open())
        return;
    acceptor_.async_accept(strand_, [self = shared_from_this()](boost::system::error_code ec,
                                                                boost::asio::ip::tcp::socket s) {
        self->on_accept(ec, std::move(s));
    });
}

// At the cap, the connection that costs least to lose: one closing anyway, then one kept alive
// between requests, then one that has sent nothing, then the oldest half-sent request (a
// probe's request arrives at once, so a slow one is the likelier attacker). Never one whose
// request is being handled or answered.
LETTERBOX_DECL std::shared_ptr<http_session> server_state::pick_victim() const {
    using phase = http_session::phase;
    const auto rank = [](phase p) {
        switch (p) {
        case phase::closing:
            return 0;
        case phase::idle:
            return 1;
        case phase::waiting_first:
            return 2;
        case phase::reading:
            return 3;
        case phase::busy:
            break;
        }
        return 4;
    };
    std::shared_ptr<http_session> victim;
    for (const auto& [id, weak] : sessions_) {
        auto s = weak.lock();
        if (!s || !s->is_open() || rank(s->current_phase()) == 4)
            continue;
        if (!victim || rank(s->current_phase()) < rank(victim->current_phase()) ||
            (rank(s->current_phase()) == rank(victim->current_phase()) &&
             s->phase_since() < victim->phase_since()))
            victim = std::move(s);
    }
    return victim;
}

LETTERBOX_DECL void server_state::on_accept(boost::system::error_code ec,
                                            boost::asio::ip::tcp::socket socket) {
    if (stopped() || !acceptor_.is_open())
        return;
    if (ec) {
        // Out of descriptors and the like: try again a little later rather than spin.
        log("ops http: accept failed: " + ec.message());
        retry_.expires_after(std::chrono::milliseconds{100});
        retry_.async_wait([self = shared_from_this()](boost::system::error_code e) {
            if (!e)
                self->accept();
        });
        return;
    }
    std::size_t open = 0;
    std::size_t reserved = 0;
    for (const auto& [id, weak] : sessions_)
        if (auto s = weak.lock(); s && s->is_open())
            ++(s->reserve() ? reserved : open);
    bool reserve = false;
    if (open >= options_.max_connections) {
        if (auto victim = pick_victim()) {
            const char* name = "a silent";
            switch (victim->current_phase()) {
            case http_session::phase::closing:
                name = "a closing";
                break;
            case http_session::phase::idle:
                name = "an idle";
                break;
            case http_session::phase::reading:
                name = "a half-sent request's";
                break;
            default:
                break;
            }
            victim->close();
            log("ops http: closed " + std::string(name) +
                " connection to make room: max_connections (" +
                std::to_string(options_.max_connections) + ") reached");
            if (victim->reserve())
                --reserved;
            else
                --open;
        }
        if (open >= options_.max_connections) {
            if (reserved >= options_.reserved_connections) {
                log("ops http: connection refused: max_connections (" +
                    std::to_string(options_.max_connections) +
                    ") reached, every connection busy and the reserved ones taken");
                boost::system::error_code ignored;
                socket.close(ignored);
                return accept();
            }
            reserve = true;
        }
    }
    const auto id = ++next_session_;
    auto s = std::make_shared<http_session>(shared_from_this(), std::move(socket), id, reserve);
    sessions_.emplace(id, s);
    s->start();
    accept();
}

LETTERBOX_DECL void server_state::stop() {
    stopped_.store(true, std::memory_order_release);
    boost::asio::dispatch(strand_, [self = shared_from_this()] { self->close_all(); });
}

LETTERBOX_DECL void server_state::shutdown_store() {
    if (store_worker_)
        store_worker_->shutdown();
}

LETTERBOX_DECL void server_state::close_all() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
    sampler_.cancel();
    std::vector<std::shared_ptr<http_session>> live;
    for (auto& [id, weak] : sessions_)
        if (auto s = weak.lock())
            live.push_back(std::move(s));
    for (auto& s : live)
        s->close();
}

LETTERBOX_DECL void server_state::set_outbox(std::shared_ptr<outbox_endpoint> e) {
    outbox_ = std::move(e);
    // Two threads: a write blocked on a locked database does not hold up the reads, which
    // SQLite's WAL serves without the lock.
    if (!store_worker_)
        store_worker_ = std::make_shared<store_worker>(2);
}

LETTERBOX_DECL void server_state::set_topology_check(findings_fn check) {
    findings_ = std::move(check);
    // The check may be slow (a live broker's passive declares): it runs on the store worker.
    if (!store_worker_)
        store_worker_ = std::make_shared<store_worker>(2);
}

LETTERBOX_DECL void server_state::add_dlq(std::shared_ptr<dlq_endpoint> e) {
    if (find_dlq(e->queue()))
        throw letterbox::error(errc::invalid_argument, "http_server: dead-letter queue '" +
                                                           e->queue() + "' is already registered");
    dlqs_.push_back(std::move(e));
}

LETTERBOX_DECL dlq_endpoint* server_state::find_dlq(const std::string& queue) const {
    for (const auto& e : dlqs_)
        if (e->queue() == queue)
            return e.get();
    return nullptr;
}

} // namespace letterbox::ops::detail
