// SPDX-License-Identifier: BSL-1.0
// What http_server does when max_connections is reached: a new connection is served, and the
// connection that costs the least to lose is closed to make room (an idle keep-alive one first,
// then one that has sent nothing, then the oldest half-sent request); connections with a
// request under way are never closed for it. When every connection is busy, a few reserved
// connections still answer health. Before, every connection over the cap was closed at once, so
// idle or silent sockets kept the health probes out.

#include <letterbox/ops/http_server.hpp>

#include "unit/ops/http_test_support.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/field.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace unit_ops_http_server_connections {

namespace {

using namespace ops_test;

/// A raw connection that the test drives byte by byte.
struct raw_socket {
    fixture& f;
    tcp::socket sock;
    std::array<char, 256> chunk{};
    std::optional<boost::system::error_code> read_ended{};
    std::string received;

    raw_socket(fixture& fx, const http_server& s)
        : f(fx)
        , sock(fx.io) {
        std::optional<boost::system::error_code> connected;
        sock.async_connect(loopback(s.local_endpoint().port()),
                           [&](boost::system::error_code ec) { connected = ec; });
        REQUIRE(f.run_until([&] { return connected.has_value(); }));
        REQUIRE_FALSE(*connected);
        read_more();
    }
    void read_more() {
        sock.async_read_some(boost::asio::buffer(chunk),
                             [this](boost::system::error_code ec, std::size_t n) {
                                 received.append(chunk.data(), n);
                                 if (ec)
                                     read_ended = ec;
                                 else
                                     read_more();
                             });
    }
    void write(const std::string& bytes) {
        std::optional<boost::system::error_code> written;
        boost::asio::async_write(sock, boost::asio::buffer(bytes),
                                 [&](boost::system::error_code ec, std::size_t) { written = ec; });
        REQUIRE(f.run_until([&] { return written.has_value(); }));
    }
    /// Whether the server closed it (within a short wait).
    bool closed_by_server(std::chrono::milliseconds wait = 2s) {
        return f.run_until([&] { return read_ended.has_value(); }, wait);
    }
};

} // namespace

TEST_CASE("http_server: at max_connections an idle keep-alive connection makes room first",
          "[ops][http_server]") {
    fixture f;
    auto o = f.options();
    o.max_connections = 2;
    o.reserved_connections = 0;
    auto server = f.make_server(o);

    client idle(f, *server);
    CHECK(idle.get("/health/live").status() == 200); // now idle, kept alive
    raw_socket silent(f, *server);                   // connected, sends nothing
    // Both connections are accepted before the next one arrives.
    REQUIRE(f.run_until([&] { return f.logged("/health/live -> 200"); }));

    client newcomer(f, *server);
    auto r = newcomer.get("/health/live");
    CHECK(r.status() == 200);
    // The idle one was closed to make room; the silent one is still open.
    std::array<char, 16> byte{};
    std::optional<boost::system::error_code> idle_read;
    idle.stream.async_read_some(boost::asio::buffer(byte),
                                [&](boost::system::error_code ec, std::size_t) { idle_read = ec; });
    REQUIRE(f.run_until([&] { return idle_read.has_value(); }));
    CHECK(*idle_read);
    CHECK_FALSE(silent.closed_by_server(300ms));
    CHECK(f.logged("max_connections"));
}

TEST_CASE("http_server: at max_connections a connection that sent nothing goes before a "
          "half-sent request",
          "[ops][http_server]") {
    fixture f;
    auto o = f.options();
    o.max_connections = 2;
    o.reserved_connections = 0;
    auto server = f.make_server(o);

    raw_socket slow(f, *server);
    slow.write("GET /health/live HTTP/1.1\r\nHo"); // under way
    raw_socket silent(f, *server);                 // connected after it, sends nothing
    f.run_until([] { return false; }, 100ms);      // both accepted and read from

    client newcomer(f, *server);
    CHECK(newcomer.get("/health/live").status() == 200);
    CHECK(silent.closed_by_server());
    CHECK(silent.received.empty());
    CHECK_FALSE(slow.read_ended.has_value());
    // The half-sent request completes and is answered.
    slow.write("st: 127.0.0.1\r\n\r\n");
    REQUIRE(f.run_until([&] { return slow.received.find("\r\n\r\n") != std::string::npos; }));
    CHECK(slow.received.starts_with("HTTP/1.1 200"));
}

TEST_CASE("http_server: when every connection is busy, reserved connections answer health only",
          "[ops][http_server]") {
    fixture f(false);
    // A 6 MiB message, larger than the socket buffers absorb (the client asks for a small
    // receive buffer): its response to a client that never reads keeps that connection busy
    // until the write timeout.
    const auto id = f.dead_letter_explicitly({}, "blob", std::string(6 * 1024 * 1024, 'x'));
    auto o = f.options();
    o.max_connections = 1;
    o.reserved_connections = 1;
    auto server = f.make_server(o);

    client stalled(f, *server, true);
    stalled.send(http::verb::get, "/dlq/work.dlq/messages/" + letterbox::to_string(id), {}, bearer);
    REQUIRE(f.run_until([&] { return stalled.stream.socket().available() > 0; }));

    {
        client probe(f, *server);
        auto live = probe.get("/health/live");
        CHECK(live.status() == 200);
        CHECK(probe.get("/health/ready").status() == 200);
        auto other = probe.get("/queues");
        CHECK(other.status() == 503);
        CHECK(other.json()["error"]["code"] == "busy");
        CHECK_FALSE(other.res[http::field::retry_after].empty());
    }
    // The reserve is used up only while it is held.
    client again(f, *server);
    CHECK(again.get("/health/live").status() == 200);
}

} // namespace unit_ops_http_server_connections
