// SPDX-License-Identifier: BSL-1.0
//
// The demo's HTTP, on Boost.Beast and 127.0.0.1 only, all on one io_context:
//
// - `http_server`: the enrollment service's front door. One request per connection; the route
//   answers through a `responder`, or drops the connection without an answer (what a client
//   sees when the process behind it dies).
// - `async_post_json`: the load generator's client, asynchronous on the same io_context, with a
//   deadline over the whole exchange.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace demo::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

using request = bhttp::request<bhttp::string_body>;
using response = bhttp::response<bhttp::string_body>;

/// A response with a JSON body (already serialised).
inline response json_response(bhttp::status status, std::string body) {
    response res{status, 11};
    res.set(bhttp::field::content_type, "application/json");
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

namespace detail {

// One server connection: read a request (bounded by a deadline), hand it to the route, then
// write the answer or close. The session keeps itself alive through the callbacks it is in.
struct session : std::enable_shared_from_this<session> {
    using route = std::function<void(const request&, std::shared_ptr<session>)>;

    session(tcp::socket s, std::shared_ptr<route> r)
        : stream(std::move(s))
        , route_(std::move(r)) {}

    void start() {
        stream.expires_after(std::chrono::seconds(10));
        bhttp::async_read(stream, buffer, req,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec)
                                  (*self->route_)(self->req, self);
                          });
    }

    void reply(response res) {
        res_ = std::move(res);
        res_.keep_alive(false);
        res_.prepare_payload();
        stream.expires_after(std::chrono::seconds(10));
        bhttp::async_write(stream, res_,
                           [self = shared_from_this()](beast::error_code, std::size_t) {
                               beast::error_code ignored;
                               self->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
                           });
    }

    void drop() {
        beast::error_code ignored;
        stream.socket().close(ignored);
    }

    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    request req;
    response res_;
    std::shared_ptr<route> route_;
};

} // namespace detail

/// How a route answers one request, exactly once: `reply(response)`, or `drop()` to close the
/// connection without answering.
class responder {
public:
    explicit responder(std::shared_ptr<detail::session> s)
        : session_(std::move(s)) {}

    void reply(response res) const { session_->reply(std::move(res)); }
    void drop() const { session_->drop(); }

private:
    std::shared_ptr<detail::session> session_;
};

/// An HTTP server on 127.0.0.1 and an ephemeral port. It must outlive the io_context's
/// handlers, or be closed (`close`) before the io_context runs its last ones.
class http_server {
public:
    using route = std::function<void(const request&, responder)>;

    http_server(asio::any_io_executor ex, route r)
        : acceptor_(ex, tcp::endpoint(asio::ip::address_v4::loopback(), 0))
        , route_(std::make_shared<detail::session::route>(
              [r = std::move(r)](const request& req, std::shared_ptr<detail::session> s) {
                  r(req, responder(std::move(s)));
              })) {
        accept();
    }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

    /// Stops accepting; requests already read are still answered.
    void close() {
        beast::error_code ignored;
        acceptor_.close(ignored);
    }

private:
    void accept() {
        // Sessions share the route, so a session may outlive a closed server; the accept
        // handler touches `this` only while the acceptor is open.
        acceptor_.async_accept([this](beast::error_code ec, tcp::socket s) {
            if (ec)
                return;
            std::make_shared<detail::session>(std::move(s), route_)->start();
            accept();
        });
    }

    tcp::acceptor acceptor_;
    std::shared_ptr<detail::session::route> route_;
};

/// What `async_post_json` got: a status and a body, or `error` (connect, write, read, timeout;
/// "end of stream" when the server closed the connection without answering).
struct reply {
    std::string error{};
    unsigned status = 0;
    std::string body{};
};

/// POSTs `body` (JSON) to `http://127.0.0.1:<port><target>` on `ex`, and calls `done(reply)`
/// once, on `ex`, within `timeout`.
inline void async_post_json(asio::any_io_executor ex, std::uint16_t port, std::string target,
                            std::string body, std::chrono::milliseconds timeout,
                            std::function<void(reply)> done) {
    struct exchange {
        exchange(asio::any_io_executor ex)
            : stream(std::move(ex)) {}
        beast::tcp_stream stream;
        beast::flat_buffer buffer;
        request req;
        response res;
        std::function<void(reply)> done;
        void fail(const char* what, beast::error_code ec) {
            done({std::string(what) + ": " + ec.message(), 0, {}});
        }
    };
    auto x = std::make_shared<exchange>(ex);
    x->done = std::move(done);
    x->req = request{bhttp::verb::post, target, 11};
    x->req.set(bhttp::field::host, "127.0.0.1");
    x->req.set(bhttp::field::content_type, "application/json");
    x->req.body() = std::move(body);
    x->req.prepare_payload();
    // The stream's deadline covers connect, write and read: when it passes, the pending
    // operation completes with beast::error::timeout.
    x->stream.expires_after(timeout);
    x->stream.async_connect(
        tcp::endpoint(asio::ip::address_v4::loopback(), port), [x](beast::error_code ec) {
            if (ec)
                return x->fail("connect", ec);
            bhttp::async_write(x->stream, x->req, [x](beast::error_code ec, std::size_t) {
                if (ec)
                    return x->fail("write", ec);
                bhttp::async_read(x->stream, x->buffer, x->res,
                                  [x](beast::error_code ec, std::size_t) {
                                      if (ec)
                                          return x->fail("read", ec);
                                      x->done({{}, x->res.result_int(), x->res.body()});
                                  });
            });
        });
}

} // namespace demo::http
