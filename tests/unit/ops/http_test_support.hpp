// SPDX-License-Identifier: BSL-1.0
// What the http_server unit tests share: the dead-letter world with an outbox and a server on an
// ephemeral loopback port, a keep-alive client, and a raw socket exchange for hostile clients.
// The server and its clients share one io_context, run on the test's thread with a real-time
// deadline for every wait.
#pragma once

#include <letterbox/ops/http_server.hpp>
#include <letterbox/ops/http_server_options.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>

#include "unit/dlq/dlq_world.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ops_test {

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using namespace std::chrono_literals;
using letterbox::ops::http_server;
using letterbox::ops::http_server_options;

inline constexpr const char* token = "s3cret-T0ken-xyz";
inline const std::string bearer = std::string("Bearer ") + token;

struct reply {
    http::response<http::string_body> res;
    nlohmann::json json() const { return nlohmann::json::parse(res.body()); }
    int status() const { return res.result_int(); }
    std::string text() const {
        std::ostringstream out;
        out << res;
        return out.str();
    }
};

/// The dead-letter world of the dlq tests (five dead letters in `work.dlq`), an outbox, and an
/// http_server on an ephemeral loopback port; real-time driving for the sockets.
struct fixture : dlq_test::world {
    std::vector<letterbox::message_id> ids;
    letterbox::in_memory_outbox_store outbox;
    std::vector<std::string> log_lines;
    std::vector<std::string> seen; // every response and log line, to look for the token

    explicit fixture(bool five_dead_letters = true) {
        if (!five_dead_letters)
            return;
        ids.push_back(dead_letter_natively("order.placed", R"({"order":1})"));
        ids.push_back(
            dead_letter_natively("payment.requested", R"({"payment":1})", {{"x-tenant", "acme"}}));
        dlq_test::fault a;
        ids.push_back(
            dead_letter_explicitly(a, "order.placed", R"({"order":2})", {{"x-tenant", "acme"}}));
        dlq_test::fault b;
        b.reason = "poison";
        b.exception_type = "std::invalid_argument";
        ids.push_back(dead_letter_explicitly(b, "order.cancelled", R"({"order":3})"));
        dlq_test::fault c;
        ids.push_back(dead_letter_explicitly(c, "order.shipped", R"({"order":4})"));
        REQUIRE(ready(dlq_test::dlq_name) == 5);
    }

    http_server_options options(std::string tok = token) {
        http_server_options o;
        o.port = 0;
        o.token = std::move(tok);
        o.log = [this](std::string_view line) {
            log_lines.emplace_back(line);
            seen.emplace_back(line);
        };
        return o;
    }

    std::unique_ptr<http_server> make_server(http_server_options o) {
        auto s = std::make_unique<http_server>(io.get_executor(), std::move(o));
        s->add_dead_letter_queue(transport, dlq_test::dlq_name);
        s->set_outbox(outbox, clock);
        REQUIRE_FALSE(s->listen());
        REQUIRE(s->local_endpoint().port() != 0);
        return s;
    }

    /// Runs the io_context until `done()` or the real-time deadline.
    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
        const auto end = std::chrono::steady_clock::now() + limit;
        for (std::size_t step = 0; step < 10'000'000; ++step) {
            if (done())
                return true;
            if (std::chrono::steady_clock::now() >= end)
                return false;
            io.restart();
            io.run_one_for(5ms);
        }
        return done();
    }

    bool logged(std::string_view part) const {
        for (const auto& l : log_lines)
            if (l.find(part) != std::string::npos)
                return true;
        return false;
    }
};

inline tcp::endpoint loopback(unsigned short port) {
    return tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port);
}

/// A keep-alive HTTP client on the fixture's io_context.
struct client {
    fixture& f;
    boost::beast::tcp_stream stream;
    boost::beast::flat_buffer buffer;
    std::string host = "127.0.0.1";

    /// Connects to `s`. A client that will not read its responses asks for a small receive
    /// buffer, so that loopback's buffers cannot take a large response off the server.
    client(fixture& fx, const http_server& s, bool small_receive_buffer = false)
        : f(fx)
        , stream(fx.io) {
        if (small_receive_buffer) {
            stream.socket().open(tcp::v4());
            stream.socket().set_option(boost::asio::socket_base::receive_buffer_size(4096));
        }
        std::optional<boost::system::error_code> connected;
        stream.async_connect(loopback(s.local_endpoint().port()),
                             [&](boost::system::error_code ec) { connected = ec; });
        REQUIRE(f.run_until([&] { return connected.has_value(); }));
        REQUIRE_FALSE(*connected);
    }

    void send(http::verb method, const std::string& target, std::optional<std::string> body = {},
              std::optional<std::string> auth = {}) {
        http::request<http::string_body> req{method, target, 11};
        req.set(http::field::host, host);
        if (auth)
            req.set(http::field::authorization, *auth);
        if (body) {
            req.set(http::field::content_type, "application/json");
            req.body() = *body;
        }
        req.prepare_payload();
        std::optional<boost::system::error_code> written;
        http::async_write(stream, req,
                          [&](boost::system::error_code ec, std::size_t) { written = ec; });
        REQUIRE(f.run_until([&] { return written.has_value(); }));
        REQUIRE_FALSE(*written);
    }

    reply receive() {
        reply r;
        std::optional<boost::system::error_code> read;
        http::response_parser<http::string_body> parser;
        parser.body_limit(512 * 1024 * 1024);
        http::async_read(stream, buffer, parser,
                         [&](boost::system::error_code ec, std::size_t) { read = ec; });
        REQUIRE(f.run_until([&] { return read.has_value(); }));
        REQUIRE_FALSE(*read);
        r.res = parser.release();
        f.seen.push_back(r.text());
        CHECK(r.res[http::field::cache_control] == "no-store");
        CHECK(r.res["X-Content-Type-Options"] == "nosniff");
        return r;
    }

    reply call(http::verb method, const std::string& target, std::optional<std::string> body = {},
               std::optional<std::string> auth = {}) {
        send(method, target, std::move(body), std::move(auth));
        return receive();
    }

    /// A GET with the token (reads of message bodies need it); `auth` std::nullopt sends none.
    reply get(const std::string& target, std::optional<std::string> auth = bearer) {
        return call(http::verb::get, target, {}, std::move(auth));
    }
    reply post(const std::string& target, std::optional<std::string> body,
               std::optional<std::string> auth = bearer) {
        return call(http::verb::post, target, std::move(body), std::move(auth));
    }
    reply del(const std::string& target, std::optional<std::string> body = {},
              std::optional<std::string> auth = bearer) {
        return call(http::verb::delete_, target, std::move(body), std::move(auth));
    }
};

/// Connects, sends `bytes` (all of them, at once), and reads until the server closes the
/// connection or the deadline passes. Returns what was read and whether the server closed.
struct raw_result {
    std::string text;
    bool closed = false;
};
inline raw_result raw_exchange(fixture& f, const http_server& s, const std::string& bytes,
                               std::chrono::milliseconds limit = 10s, bool must_write = true) {
    tcp::socket sock(f.io);
    std::optional<boost::system::error_code> connected;
    sock.async_connect(loopback(s.local_endpoint().port()),
                       [&](boost::system::error_code ec) { connected = ec; });
    REQUIRE(f.run_until([&] { return connected.has_value(); }));
    REQUIRE_FALSE(*connected);
    std::optional<boost::system::error_code> written;
    boost::asio::async_write(sock, boost::asio::buffer(bytes),
                             [&](boost::system::error_code ec, std::size_t) { written = ec; });
    REQUIRE(f.run_until([&] { return written.has_value(); }));
    if (must_write)
        REQUIRE_FALSE(*written);
    raw_result out;
    std::array<char, 4096> chunk{};
    std::function<void(boost::system::error_code, std::size_t)> on_read =
        [&](boost::system::error_code ec, std::size_t n) {
            out.text.append(chunk.data(), n);
            if (ec) {
                out.closed = true;
                return;
            }
            sock.async_read_some(boost::asio::buffer(chunk), on_read);
        };
    sock.async_read_some(boost::asio::buffer(chunk), on_read);
    const bool ended = f.run_until([&] { return out.closed; }, limit);
    if (!ended) {
        boost::system::error_code ignored;
        sock.close(ignored);
        REQUIRE(f.run_until([&] { return out.closed; }));
        out.closed = false;
    }
    f.seen.push_back(out.text);
    return out;
}

inline nlohmann::json body_of(const std::string& raw) {
    const auto at = raw.find("\r\n\r\n");
    REQUIRE(at != std::string::npos);
    return nlohmann::json::parse(raw.substr(at + 4));
}

} // namespace ops_test
