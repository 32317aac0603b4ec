// SPDX-License-Identifier: BSL-1.0
// A scripted fake AMQP server on 127.0.0.1 and a client running amqp::connection, for the tests
// that drive the connection over a real socket (connection.cpp, hostile_server.cpp). The server
// runs on its own thread and io_context; every wait on either side has a deadline, and every
// step reports failure instead of blocking.
#pragma once

#include <letterbox/amqp/connection.hpp>

#include <letterbox/amqp/codec/basic_properties.hpp>
#include <letterbox/amqp/codec/frame.hpp>
#include <letterbox/amqp/codec/frame_writer.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>

namespace amqp_test {

/// One frame as the fake server reads it.
struct server_frame {
    int type = 0;
    std::uint16_t channel = 0;
    std::string payload;
    int end = 0; ///< the frame-end octet as received

    /// The frame's size on the wire: header, payload and end octet.
    std::size_t wire_size() const {
        return letterbox::amqp::codec::frame_overhead + payload.size();
    }
};

/// A fake AMQP server for one client connection. Each call runs the server's own io_context
/// until the step is done or the shared deadline (`budget` after construction) passes.
class scripted_server {
public:
    explicit scripted_server(std::chrono::milliseconds budget = std::chrono::seconds{15})
        : acceptor_(io_, boost::asio::ip::tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0))
        , deadline_(std::chrono::steady_clock::now() + budget) {
        (void)writer_.set_frame_max(0); // the server may write frames of any size it likes
    }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

    bool accept() {
        bool done = false;
        acceptor_.async_accept(socket_, [&](boost::system::error_code ec) { done = !ec; });
        if (!run([&] { return done; }))
            return false;
        // Each scripted step is its own small write: without this, Nagle holds the next one
        // back until the client's (delayed) ack.
        boost::system::error_code ignored;
        socket_.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
        return true;
    }

    bool read_exact(std::string& out, std::size_t n) {
        out.assign(n, '\0');
        std::optional<bool> ok;
        boost::asio::async_read(socket_, boost::asio::buffer(out),
                                [&](boost::system::error_code ec, std::size_t) { ok = !ec; });
        return run([&] { return ok.has_value(); }) && *ok;
    }

    /// The next frame, whatever its size up to 16 MiB (a client bug must show as a big frame,
    /// not as a read failure).
    std::optional<server_frame> read_frame() {
        std::string header;
        if (!read_exact(header, letterbox::amqp::codec::frame_header_size))
            return std::nullopt;
        const auto u = [&](std::size_t i) {
            return static_cast<unsigned char>(header[i]);
        };
        server_frame f;
        f.type = u(0);
        f.channel = static_cast<std::uint16_t>(u(1) << 8U | u(2));
        const std::size_t size =
            std::size_t{u(3)} << 24U | std::size_t{u(4)} << 16U | std::size_t{u(5)} << 8U | u(6);
        std::string rest;
        if (size > std::size_t{1} << 24U || !read_exact(rest, size + 1))
            return std::nullopt;
        f.end = static_cast<unsigned char>(rest.back());
        rest.pop_back();
        f.payload = std::move(rest);
        return f;
    }

    /// The next method frame's method, skipping heartbeats; its channel goes to `*channel`.
    std::optional<letterbox::amqp::codec::method> read_method(std::uint16_t* channel = nullptr) {
        for (int skipped = 0; skipped < 100; ++skipped) {
            auto f = read_frame();
            if (!f)
                return std::nullopt;
            if (f->type == 8)
                continue;
            if (f->type != 1 || f->end != letterbox::amqp::codec::frame_end)
                return std::nullopt;
            std::error_code ec;
            auto m = letterbox::amqp::codec::decode_method(f->payload, ec);
            if (ec)
                return std::nullopt;
            if (channel != nullptr)
                *channel = f->channel;
            return m;
        }
        return std::nullopt;
    }

    bool send(const std::string& bytes) {
        std::optional<bool> ok;
        boost::asio::async_write(socket_, boost::asio::buffer(bytes),
                                 [&](boost::system::error_code ec, std::size_t) { ok = !ec; });
        return run([&] { return ok.has_value(); }) && *ok;
    }

    bool send_method(const letterbox::amqp::codec::method& m, std::uint16_t channel = 0) {
        std::string out;
        if (writer_.write_method(out, channel, m))
            return false;
        return send(out);
    }

    /// Accepts the client, reads its protocol header, sends connection.start and reads
    /// connection.start-ok (into `start_ok_`).
    bool greet() {
        namespace codec = letterbox::amqp::codec;
        std::string header;
        if (!accept() || !read_exact(header, codec::protocol_header.size()) ||
            header != codec::protocol_header)
            return false;
        codec::connection_start start;
        start.mechanisms = "PLAIN AMQPLAIN";
        start.locales = "en_US";
        start.server_properties = server_properties_;
        if (!send_method(start))
            return false;
        auto start_ok = read_method();
        if (!start_ok || !std::holds_alternative<codec::connection_start_ok>(*start_ok))
            return false;
        start_ok_ = std::get<codec::connection_start_ok>(*start_ok);
        return true;
    }

    /// Sends `tune` and reads connection.tune-ok and connection.open (into `tune_ok_`, `open_`).
    bool tune(letterbox::amqp::codec::connection_tune tune) {
        namespace codec = letterbox::amqp::codec;
        if (!send_method(tune))
            return false;
        auto tune_ok = read_method();
        if (!tune_ok || !std::holds_alternative<codec::connection_tune_ok>(*tune_ok))
            return false;
        tune_ok_ = std::get<codec::connection_tune_ok>(*tune_ok);
        auto open = read_method();
        if (!open || !std::holds_alternative<codec::connection_open>(*open))
            return false;
        open_ = std::get<codec::connection_open>(*open);
        return true;
    }

    /// Plays the server's part of the handshake up to connection.open-ok, with `tune`.
    bool handshake(letterbox::amqp::codec::connection_tune tune_with) {
        return greet() && tune(tune_with) &&
               send_method(letterbox::amqp::codec::connection_open_ok{});
    }

    /// Whether the client closed its end (a read gives EOF, or a reset) before the deadline.
    /// Bytes the client still sends are counted in `bytes_before_eof_`.
    bool wait_for_eof() {
        char byte = 0;
        std::optional<boost::system::error_code> result;
        for (int reads = 0; reads < 100000; ++reads) {
            result.reset();
            socket_.async_read_some(
                boost::asio::buffer(&byte, 1),
                [&](boost::system::error_code ec, std::size_t) { result = ec; });
            if (!run([&] { return result.has_value(); }))
                return false;
            if (*result)
                return true;
            ++bytes_before_eof_;
        }
        return false;
    }

    /// The server properties `greet` sends in connection.start.
    letterbox::field_table server_properties_{{"product", std::string("fake")}};
    letterbox::amqp::codec::connection_start_ok start_ok_{};
    letterbox::amqp::codec::connection_tune_ok tune_ok_{};
    letterbox::amqp::codec::connection_open open_{};
    std::size_t bytes_before_eof_ = 0;

private:
    bool run(const std::function<bool()>& done) {
        io_.restart();
        while (!done()) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline_)
                return false;
            io_.run_one_for(deadline_ - now);
        }
        return true;
    }

    boost::asio::io_context io_{};
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::ip::tcp::socket socket_{io_};
    letterbox::amqp::codec::frame_writer writer_{};
    std::chrono::steady_clock::time_point deadline_;
};

/// A URL for the fake server on `port`, with credentials and a vhost the handshake test checks.
inline letterbox::amqp::url loopback_url(std::uint16_t port) {
    letterbox::amqp::url u;
    u.host = "127.0.0.1";
    u.port = port;
    u.user = "user";
    u.password = "secret";
    u.vhost = "tests";
    return u;
}

/// Runs `io` on the calling thread until `done()` or `timeout`; false on timeout.
inline bool run_until(boost::asio::io_context& io, const std::function<bool()>& done,
                      std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    io.restart();
    while (!done()) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline)
            return false;
        io.run_one_for(deadline - now);
    }
    return true;
}

/// The client side: an amqp::connection on an io_context run on the test's thread, with a
/// deadline per wait.
struct client {
    boost::asio::io_context io{};
    letterbox::amqp::connection conn{io.get_executor(), "letterbox-test"};

    bool run_until(const std::function<bool()>& done,
                   std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
        return amqp_test::run_until(io, done, timeout);
    }

    std::error_code connect(const letterbox::amqp::url& u) {
        std::optional<std::error_code> result;
        conn.async_connect(u, [&](std::error_code ec) { result = ec; });
        if (!run_until([&] { return result.has_value(); }))
            return make_error_code(letterbox::errc::timed_out);
        return *result;
    }

    std::error_code connect(std::uint16_t port,
                            std::optional<std::chrono::seconds> heartbeat = {}) {
        auto u = loopback_url(port);
        u.heartbeat = heartbeat;
        return connect(u);
    }
};

/// Answers the client's connection.close and waits for it to drop the socket.
inline bool serve_close(scripted_server& s) {
    namespace codec = letterbox::amqp::codec;
    auto m = s.read_method();
    return m && std::holds_alternative<codec::connection_close>(*m) &&
           s.send_method(codec::connection_close_ok{}) && s.wait_for_eof();
}

/// Closes the transport `t` and runs `c` (a loop with `run_until`) until it is closed: the
/// close's error, or `timed_out`.
template <class Loop, class Transport>
std::error_code close_transport(Loop& c, Transport& t) {
    std::optional<std::error_code> closed;
    t.async_close([&](std::error_code ec) { closed = ec; });
    if (!c.run_until([&] { return closed.has_value(); }))
        return make_error_code(letterbox::errc::timed_out);
    return *closed;
}

} // namespace amqp_test
