// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of http_session (included by server_state.hpp when header-only, by
// <letterbox/ops/src.hpp> under LETTERBOX_SEPARATE_COMPILATION).

#include <letterbox/config.hpp>
#include <letterbox/ops/detail/server_state.hpp>

#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

LETTERBOX_DECL http_session::http_session(std::shared_ptr<server_state> server,
                                          boost::asio::ip::tcp::socket socket, std::uint64_t id,
                                          bool reserve)
    : server_(std::move(server))
    , stream_(std::move(socket))
    , deadline_(server_->strand())
    , id_(id)
    , reserve_(reserve) {
    boost::system::error_code ec;
    const auto peer = stream_.socket().remote_endpoint(ec);
    if (!ec)
        remote_ = peer.address().to_string() + ":" + std::to_string(peer.port());
    const auto local = stream_.socket().local_endpoint(ec);
    if (!ec)
        local_ = local.address();
}

LETTERBOX_DECL http_session::~http_session() {
    release_held();
    server_->forget(id_);
}

LETTERBOX_DECL void http_session::start() {
    wait_for_request();
}

LETTERBOX_DECL void http_session::close() noexcept {
    if (closed_)
        return;
    closed_ = true;
    release_held();
    deadline_.cancel();
    boost::system::error_code ec;
    stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
}

// Waits for the first bytes of the next request: on a new connection for at most
// read_timeout, between keep-alive requests for at most idle_timeout; then closes silently.
LETTERBOX_DECL void http_session::wait_for_request() {
    if (closed_)
        return;
    if (buffer_.size() != 0)
        return read_request(); // a pipelined request is already here
    const auto& o = server_->options();
    enter(first_ ? phase::waiting_first : phase::idle);
    stream_.expires_after(first_ ? o.read_timeout : o.idle_timeout);
    stream_.async_read_some(
        buffer_.prepare(1024),
        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
            self->on_first_bytes(ec, n);
        });
}

LETTERBOX_DECL void http_session::on_first_bytes(boost::system::error_code ec, std::size_t n) {
    if (ec || closed_)
        return close();
    buffer_.commit(n);
    read_request();
}

// Reads the whole request under the deadline (read_timeout from its first byte). The deadline
// is our own timer, not the stream's: the stream's timeout would close the socket, and a late
// client gets a 408 first.
LETTERBOX_DECL void http_session::read_request() {
    const auto& o = server_->options();
    enter(phase::reading);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(o.header_limit));
    parser_->body_limit(o.body_limit);
    timed_out_ = false;
    stream_.expires_never();
    deadline_.expires_after(o.read_timeout);
    deadline_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->closed_)
            return;
        self->timed_out_ = true;
        self->stream_.cancel();
    });
    boost::beast::http::async_read(stream_, buffer_, *parser_,
                                   [self = shared_from_this()](boost::system::error_code ec,
                                                               std::size_t) { self->on_read(ec); });
}

LETTERBOX_DECL void http_session::on_read(boost::system::error_code ec) {
    namespace http = boost::beast::http;
    deadline_.cancel();
    if (closed_)
        return;
    if (ec) {
        if (timed_out_)
            return send(error_response(status::request_timeout, "request_timeout",
                                       "the request did not arrive within the read timeout"),
                        true);
        if (ec == http::error::header_limit)
            return send(error_response(status::request_header_fields_too_large, "header_too_large",
                                       "the request line and headers exceed " +
                                           std::to_string(server_->options().header_limit) +
                                           " bytes"),
                        true);
        if (ec == http::error::body_limit)
            return send(error_response(status::payload_too_large, "body_too_large",
                                       "the request body exceeds " +
                                           std::to_string(server_->options().body_limit) +
                                           " bytes"),
                        true);
        if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
            ec != http::error::end_of_stream && ec != http::error::partial_message)
            return send(error_response(status::bad_request, "bad_request",
                                       "the request is not valid HTTP/1.1"),
                        true);
        return close(); // the client went away
    }
    enter(phase::busy);
    auto req = parser_->release();
    parser_.reset();
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    first_ = false;
    const std::string_view target = req.target();
    request_line_ =
        std::string(req.method_string()) + " " + std::string(target.substr(0, target.find('?')));
    awaiting_response_ = true;
    try {
        server_->handle(shared_from_this(), std::move(req));
    } catch (const std::exception&) {
        // Nothing escapes into the application's io_context; the details stay out of the
        // response.
        if (!awaiting_response_)
            return; // it had responded already
        awaiting_response_ = false;
        send(error_response(status::internal_server_error, "internal_error",
                            "the server failed to handle the request"),
             true);
    }
}

LETTERBOX_DECL void http_session::respond(response r) {
    if (closed_ || !awaiting_response_)
        return;
    awaiting_response_ = false;
    send(std::move(r), false);
}

LETTERBOX_DECL void http_session::send(response r, bool close_after) {
    namespace http = boost::beast::http;
    if (closed_)
        return;
    enter(phase::busy);
    r.version(version_ == 10 ? 10 : 11);
    r.keep_alive(keep_alive_ && !close_after && !close_after_ && !server_->stopped());
    r.set(http::field::cache_control, "no-store");
    r.set("X-Content-Type-Options", "nosniff");
    r.prepare_payload();
    res_ = std::move(r);
    {
        std::string line = "ops http: ";
        line += remote_.empty() ? std::string("-") : remote_;
        line += ' ';
        line += request_line_.empty() ? std::string("-") : request_line_;
        line += " -> ";
        line += std::to_string(res_.result_int());
        server_->log(line);
    }
    request_line_.clear();
    // Counted until written: what clients that read slowly (or never) make the server hold.
    held_ = res_.body().size();
    server_->hold(held_);
    stream_.expires_after(server_->options().write_timeout);
    http::async_write(stream_, res_,
                      [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                          self->on_write(ec);
                      });
}

LETTERBOX_DECL void http_session::on_write(boost::system::error_code ec) {
    release_held();
    if (ec == boost::beast::error::timeout && !closed_)
        server_->log("ops http: " + (remote_.empty() ? std::string("-") : remote_) +
                     " write timed out: the response was dropped");
    if (ec || closed_)
        return close();
    const bool keep = res_.keep_alive();
    res_ = {};
    if (!keep)
        return linger_then_close();
    wait_for_request();
}

LETTERBOX_DECL void http_session::release_held() noexcept {
    server_->release(held_);
    held_ = 0;
}

// After a response that closes the connection: stop sending, then read and drop what the client
// still sends for a short while, so that closing with unread data (which sends a reset) does
// not destroy the response before the client has read it.
LETTERBOX_DECL void http_session::linger_then_close() {
    enter(phase::closing);
    boost::system::error_code ec;
    stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
    if (ec)
        return close();
    stream_.expires_after(std::chrono::seconds{1});
    stream_.async_read_some(boost::asio::buffer(discard_),
                            [self = shared_from_this()](boost::system::error_code e,
                                                        std::size_t n) { self->on_linger(e, n); });
}

LETTERBOX_DECL void http_session::on_linger(boost::system::error_code ec, std::size_t n) {
    lingered_ += n;
    const auto cap = server_->options().header_limit + server_->options().body_limit;
    if (ec || closed_ || lingered_ > cap)
        return close();
    stream_.async_read_some(boost::asio::buffer(discard_),
                            [self = shared_from_this()](boost::system::error_code e,
                                                        std::size_t m) { self->on_linger(e, m); });
}

} // namespace letterbox::ops::detail
