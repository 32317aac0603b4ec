// SPDX-License-Identifier: BSL-1.0
//
// The example's two small pieces of HTTP on Boost.Beast, both on 127.0.0.1 only:
//
// - `http_server`: a callback-style server on an ephemeral port, one request per connection.
//   A route answers through a `respond` callback, so it may answer later (after a broker
//   confirm) without blocking its io_context.
// - `post_json`: a synchronous POST with a deadline. It runs the request on a private
//   io_context, so it can be called from a thread that is itself inside another io_context's
//   handler (a letterbox delivery handler), and it never waits longer than its timeout.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace example {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

/// A response with a JSON body.
inline response json_response(http::status status, const nlohmann::json& body) {
    response res{status, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = body.dump();
    res.prepare_payload();
    return res;
}

/// An HTTP server on 127.0.0.1 and an ephemeral port. Each connection carries one request:
/// the route is called with it and a `respond` callback, which it calls exactly once, now or
/// later, on the server's executor. The server must outlive the io_context's handlers.
class http_server {
public:
    using respond = std::function<void(response)>;
    using route = std::function<void(const request&, respond)>;

    http_server(asio::any_io_executor ex, route r)
        : acceptor_(ex, tcp::endpoint(asio::ip::address_v4::loopback(), 0))
        , route_(std::make_shared<route>(std::move(r))) {
        accept();
    }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

    /// Stops accepting; requests already read are still answered.
    void close() {
        beast::error_code ignored;
        acceptor_.close(ignored);
    }

private:
    // One connection: read a request (bounded by a deadline), hand it to the route, write the
    // answer, close. The session keeps itself alive through the callbacks it is captured in.
    struct session : std::enable_shared_from_this<session> {
        session(tcp::socket s, std::shared_ptr<route> r)
            : stream(std::move(s))
            , route_(std::move(r)) {}

        void start() {
            stream.expires_after(std::chrono::seconds(10));
            http::async_read(stream, buffer, req,
                             [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                 if (ec)
                                     return;
                                 (*self->route_)(self->req, [self](response res) {
                                     self->reply(std::move(res));
                                 });
                             });
        }

        void reply(response res) {
            res_ = std::move(res);
            res_.keep_alive(false);
            res_.prepare_payload();
            stream.expires_after(std::chrono::seconds(10));
            http::async_write(
                stream, res_, [self = shared_from_this()](beast::error_code, std::size_t) {
                    beast::error_code ignored;
                    self->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
                });
        }

        beast::tcp_stream stream;
        beast::flat_buffer buffer;
        request req;
        response res_;
        std::shared_ptr<route> route_;
    };

    void accept() {
        // The route is shared with the sessions, so a session outlives a closed server safely;
        // the accept handler touches `this` only while the acceptor is open.
        acceptor_.async_accept([this](beast::error_code ec, tcp::socket s) {
            if (ec)
                return;
            std::make_shared<session>(std::move(s), route_)->start();
            accept();
        });
    }

    tcp::acceptor acceptor_;
    std::shared_ptr<route> route_;
};

/// What `post_json` got back: a transport error (connect, write, read, timeout) or a status
/// and a body.
struct http_reply {
    std::string error{}; // empty: `status` and `body` are the server's answer
    unsigned status = 0;
    std::string body{};
};

/// POSTs `body` (JSON) to `http://127.0.0.1:<port><target>` and waits for the answer, at most
/// `timeout` for the whole exchange (connect, write, read): then it gives up with an error.
///
/// Synchronous on purpose: it runs its own io_context to completion on the calling thread,
/// so it is safe inside a letterbox handler (which is synchronous and runs on the transport's
/// executor) as long as the server it calls runs on another thread.
inline http_reply post_json(std::uint16_t port, std::string_view target, std::string body,
                            const std::vector<std::pair<std::string, std::string>>& fields,
                            std::chrono::milliseconds timeout) {
    asio::io_context io;
    beast::tcp_stream stream(io);
    beast::flat_buffer buffer;
    request req{http::verb::post, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : fields)
        req.set(name, value);
    req.body() = std::move(body);
    req.prepare_payload();
    response res;
    http_reply out;
    // The stream's deadline covers every operation below: when it passes, the pending one
    // completes with beast::error::timeout and io.run() returns.
    stream.expires_after(timeout);
    stream.async_connect(
        tcp::endpoint(asio::ip::address_v4::loopback(), port), [&](beast::error_code ec) {
            if (ec) {
                out.error = "connect: " + ec.message();
                return;
            }
            http::async_write(stream, req, [&](beast::error_code ec, std::size_t) {
                if (ec) {
                    out.error = "write: " + ec.message();
                    return;
                }
                http::async_read(stream, buffer, res, [&](beast::error_code ec, std::size_t) {
                    if (ec) {
                        out.error = "read: " + ec.message();
                        return;
                    }
                    out.status = res.result_int();
                    out.body = res.body();
                });
            });
        });
    io.run();
    return out;
}

} // namespace example
