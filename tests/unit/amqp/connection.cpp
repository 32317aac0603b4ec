// SPDX-License-Identifier: BSL-1.0
// amqp::connection against a scripted fake server on 127.0.0.1: the handshake, heartbeats, a
// hostile frame and a server-initiated close. The server runs on its own thread and
// io_context; every wait on either side has a deadline.

#include <letterbox/amqp/connection.hpp>

#include <letterbox/amqp/codec/frame_writer.hpp>
#include <letterbox/amqp/codec/method.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace {

using namespace std::chrono_literals;
namespace codec = letterbox::amqp::codec;
using boost::asio::ip::tcp;

/// One frame as the fake server reads it.
struct server_frame {
    int type = 0;
    std::uint16_t channel = 0;
    std::string payload;
};

/// A fake AMQP server for one client connection. Each call runs the server's own io_context
/// until the step is done or the shared deadline passes, and reports failure instead of
/// blocking.
class scripted_server {
public:
    scripted_server()
        : acceptor_(io_, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0)) {}

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

    bool accept() {
        bool done = false;
        acceptor_.async_accept(socket_, [&](boost::system::error_code ec) { done = !ec; });
        return run([&] { return done; });
    }

    bool read_exact(std::string& out, std::size_t n) {
        out.assign(n, '\0');
        std::optional<bool> ok;
        boost::asio::async_read(socket_, boost::asio::buffer(out),
                                [&](boost::system::error_code ec, std::size_t) { ok = !ec; });
        return run([&] { return ok.has_value(); }) && *ok;
    }

    std::optional<server_frame> read_frame() {
        std::string header;
        if (!read_exact(header, 7))
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
        if (size > 1 << 20 || !read_exact(rest, size + 1))
            return std::nullopt;
        f.payload = rest.substr(0, size);
        return f;
    }

    /// The next method frame's method, skipping heartbeats.
    std::optional<codec::method> read_method() {
        for (int skipped = 0; skipped < 100; ++skipped) {
            auto f = read_frame();
            if (!f)
                return std::nullopt;
            if (f->type == 8)
                continue;
            if (f->type != 1)
                return std::nullopt;
            std::error_code ec;
            auto m = codec::decode_method(f->payload, ec);
            if (ec)
                return std::nullopt;
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

    bool send_method(const codec::method& m) {
        std::string out;
        if (writer_.write_method(out, 0, m))
            return false;
        return send(out);
    }

    /// Plays the server's part of the handshake up to connection.open-ok, with `tune`.
    bool handshake(codec::connection_tune tune) {
        std::string header;
        if (!accept() || !read_exact(header, 8) || header != codec::protocol_header)
            return false;
        codec::connection_start start;
        start.mechanisms = "PLAIN AMQPLAIN";
        start.locales = "en_US";
        start.server_properties.set("product", std::string("fake"));
        if (!send_method(start))
            return false;
        auto start_ok = read_method();
        if (!start_ok || !std::holds_alternative<codec::connection_start_ok>(*start_ok))
            return false;
        start_ok_ = std::get<codec::connection_start_ok>(*start_ok);
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
        return send_method(codec::connection_open_ok{});
    }

    /// Whether the client closed its end (a read gives EOF) before the deadline.
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
        }
        return false;
    }

    codec::connection_start_ok start_ok_{};
    codec::connection_tune_ok tune_ok_{};
    codec::connection_open open_{};

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
    tcp::acceptor acceptor_;
    tcp::socket socket_{io_};
    codec::frame_writer writer_{};
    std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::now() + 15s;
};

/// The client side: an io_context run on the test's thread, with a deadline per wait.
struct client {
    boost::asio::io_context io{};
    letterbox::amqp::connection conn{io.get_executor(), "letterbox-test"};

    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
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

    std::error_code connect(std::uint16_t port,
                            std::optional<std::chrono::seconds> heartbeat = {}) {
        letterbox::amqp::url u;
        u.host = "127.0.0.1";
        u.port = port;
        u.user = "user";
        u.password = "secret";
        u.vhost = "tests";
        u.heartbeat = heartbeat;
        std::optional<std::error_code> result;
        conn.async_connect(u, [&](std::error_code ec) { result = ec; });
        if (!run_until([&] { return result.has_value(); }))
            return make_error_code(letterbox::errc::timed_out);
        return *result;
    }
};

codec::connection_tune default_tune(std::uint16_t heartbeat = 0) {
    return codec::connection_tune{2047, 131072, heartbeat};
}

} // namespace

TEST_CASE("connection: the handshake sends PLAIN credentials, capabilities, tune-ok and the vhost",
          "[amqp][connection]") {
    scripted_server server;
    std::optional<bool> handshook;
    std::optional<codec::method> close;
    std::thread server_thread([&] {
        handshook = server.handshake(codec::connection_tune{100, 65536, 30});
        if (!*handshook)
            return;
        close = server.read_method();
        (void)server.send_method(codec::connection_close_ok{});
    });
    client c;
    const auto connected = c.connect(server.port(), std::chrono::seconds{10});

    std::optional<letterbox::amqp::connection::info> info;
    c.conn.async_info([&](std::error_code ec, letterbox::amqp::connection::info i) {
        if (!ec)
            info = std::move(i);
    });
    CHECK(c.run_until([&] { return info.has_value(); }));
    std::optional<std::error_code> closed;
    c.conn.async_close([&](std::error_code ec) { closed = ec; });
    CHECK(c.run_until([&] { return closed.has_value(); }));
    server_thread.join();

    REQUIRE(handshook.value_or(false));
    CHECK(connected == std::error_code{});
    CHECK(server.start_ok_.mechanism == "PLAIN");
    CHECK(server.start_ok_.response == std::string("\0user\0secret", 12));
    const auto* caps = server.start_ok_.client_properties.find("capabilities");
    REQUIRE(caps != nullptr);
    const auto* table = caps->get_if<letterbox::field_table>();
    REQUIRE(table != nullptr);
    for (const char* cap : {"publisher_confirms", "consumer_cancel_notify", "basic.nack",
                            "connection.blocked", "exchange_exchange_bindings"}) {
        INFO(cap);
        CHECK(table->get<bool>(cap) == std::optional<bool>(true));
    }
    // The client's heartbeat (10 s) is below the server's (30 s); frame_max and channel_max
    // are the server's, which are below the client's defaults.
    CHECK(server.tune_ok_.heartbeat == 10);
    CHECK(server.tune_ok_.frame_max == 65536);
    CHECK(server.tune_ok_.channel_max == 100);
    CHECK(server.open_.virtual_host == "tests");
    REQUIRE(info.has_value());
    CHECK(info->frame_max == 65536);
    CHECK(info->channel_max == 100);
    CHECK(info->heartbeat == std::chrono::seconds{10});
    REQUIRE(close.has_value());
    REQUIRE(std::holds_alternative<codec::connection_close>(*close));
    CHECK(std::get<codec::connection_close>(*close).reply_code == 200);
    CHECK(closed == std::error_code{});
}

TEST_CASE("connection: a silent server is declared dead after two heartbeat intervals",
          "[amqp][connection]") {
    scripted_server server;
    std::optional<bool> handshook;
    std::optional<bool> got_heartbeat;
    std::optional<bool> eof;
    std::thread server_thread([&] {
        handshook = server.handshake(default_tune(1));
        if (!*handshook)
            return;
        // The client sends heartbeats; the server sends nothing at all.
        auto f = server.read_frame();
        got_heartbeat = f && f->type == 8 && f->channel == 0 && f->payload.empty();
        eof = server.wait_for_eof();
    });
    client c;
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(c.connect(server.port(), std::chrono::seconds{1}) == std::error_code{});
    std::optional<std::error_code> closed;
    c.conn.async_wait_closed([&](std::error_code ec) { closed = ec; });
    CHECK(c.run_until([&] { return closed.has_value(); }, 10s));
    const auto elapsed = std::chrono::steady_clock::now() - started;
    server_thread.join();

    REQUIRE(handshook.value_or(false));
    CHECK(got_heartbeat.value_or(false));
    CHECK(eof.value_or(false));
    REQUIRE(closed.has_value());
    CHECK(*closed == letterbox::errc::timed_out);
    CHECK(elapsed >= 2s);
    CHECK(elapsed < 5s);
}

TEST_CASE("connection: a frame above frame_max closes the connection with frame_error",
          "[amqp][connection]") {
    scripted_server server;
    std::optional<bool> handshook;
    std::optional<codec::method> reply;
    std::thread server_thread([&] {
        handshook = server.handshake(default_tune());
        if (!*handshook)
            return;
        // A method frame header announcing 16 MiB on channel 0, and a few bytes of it.
        std::string frame{"\x01\x00\x00\x01\x00\x00\x00", 7};
        frame.append(64, 'x');
        (void)server.send(frame);
        reply = server.read_method();
    });
    client c;
    REQUIRE(c.connect(server.port()) == std::error_code{});
    std::optional<std::error_code> closed;
    c.conn.async_wait_closed([&](std::error_code ec) { closed = ec; });
    CHECK(c.run_until([&] { return closed.has_value(); }));
    server_thread.join();

    REQUIRE(handshook.value_or(false));
    REQUIRE(closed.has_value());
    CHECK(*closed == letterbox::errc::frame_error);
    REQUIRE(reply.has_value());
    REQUIRE(std::holds_alternative<codec::connection_close>(*reply));
    CHECK(std::get<codec::connection_close>(*reply).reply_code == 501);
}

TEST_CASE("connection: a connection.close from the server is surfaced with its reply code",
          "[amqp][connection]") {
    scripted_server server;
    std::optional<bool> handshook;
    std::optional<codec::method> reply;
    std::thread server_thread([&] {
        handshook = server.handshake(default_tune());
        if (!*handshook)
            return;
        (void)server.send_method(codec::connection_close{
            320, "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'", 0,
            0});
        reply = server.read_method();
    });
    client c;
    REQUIRE(c.connect(server.port()) == std::error_code{});
    std::optional<std::error_code> closed;
    c.conn.async_wait_closed([&](std::error_code ec) { closed = ec; });
    CHECK(c.run_until([&] { return closed.has_value(); }));
    server_thread.join();

    REQUIRE(handshook.value_or(false));
    REQUIRE(closed.has_value());
    CHECK(*closed == letterbox::errc::connection_forced);
    REQUIRE(reply.has_value());
    CHECK(std::holds_alternative<codec::connection_close_ok>(*reply));
}

TEST_CASE("connection: amqps is refused as not implemented", "[amqp][connection]") {
    client c;
    letterbox::amqp::url u;
    u.tls = true;
    u.host = "127.0.0.1";
    u.port = 1; // never contacted
    std::optional<std::error_code> result;
    c.conn.async_connect(u, [&](std::error_code ec) { result = ec; });
    REQUIRE(c.run_until([&] { return result.has_value(); }));
    CHECK(*result == letterbox::errc::not_implemented);
}
