// SPDX-License-Identifier: BSL-1.0
// amqp::connection against a scripted fake server on 127.0.0.1 (fake_server.hpp): the
// handshake, heartbeats, a hostile frame and a server-initiated close. The server runs on its
// own thread and io_context; every wait on either side has a deadline. hostile_server.cpp has
// the hostile cases.

#include <letterbox/amqp/connection.hpp>

#include "fake_server.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/ssl/error.hpp>

#include <letterbox/amqp/codec/method.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace unit_amqp_connection {

namespace {

using namespace std::chrono_literals;
namespace codec = letterbox::amqp::codec;
using amqp_test::client;
using amqp_test::loopback_url;
using amqp_test::scripted_server;

codec::connection_tune default_tune(std::uint16_t heartbeat = 0) {
    return codec::connection_tune{2047, 131072, heartbeat};
}

} // namespace

TEST_CASE("connection: a connect cancelled during the handshake aborts it, and its other "
          "operations cancel before they start",
          "[amqp][connection][cancellation]") {
    // The server accepts the TCP connection but never sends connection.start: the handshake
    // waits until it is cancelled.
    scripted_server server;
    client c;
    boost::asio::cancellation_signal signal;
    std::optional<std::error_code> connected;
    c.conn.async_connect(loopback_url(server.port()),
                         boost::asio::bind_cancellation_slot(
                             signal.slot(), [&](std::error_code ec) { connected = ec; }));
    CHECK_FALSE(c.run_until([&] { return connected.has_value(); }, std::chrono::milliseconds{200}));
    signal.emit(boost::asio::cancellation_type::terminal);
    REQUIRE(c.run_until([&] { return connected.has_value(); }));
    CHECK(*connected == std::errc::operation_canceled);
    CHECK_FALSE(signal.slot().has_handler());

    // wait_closed completes with the error the connection closed with: it was aborted.
    std::optional<std::error_code> closed;
    c.conn.async_wait_closed([&](std::error_code ec) { closed = ec; });
    REQUIRE(c.run_until([&] { return closed.has_value(); }));
    CHECK(*closed);

    auto cancelled_at_once = [&](auto initiate) {
        boost::asio::cancellation_signal s;
        std::optional<std::error_code> result;
        initiate(boost::asio::bind_cancellation_slot(
            s.slot(), [&](std::error_code ec, auto&&...) { result = ec; }));
        s.emit(boost::asio::cancellation_type::terminal);
        REQUIRE(c.run_until([&] { return result.has_value(); }));
        return *result;
    };
    const std::error_condition canceled = std::errc::operation_canceled;
    CHECK(cancelled_at_once([&](auto tok) { c.conn.async_info(tok); }) == canceled);
    CHECK(cancelled_at_once([&](auto tok) { c.conn.async_wait_closed(tok); }) == canceled);
    CHECK(cancelled_at_once([&](auto tok) { c.conn.async_close(tok); }) == canceled);
}

TEST_CASE("connection: the handshake sends PLAIN credentials, capabilities, tune-ok and the vhost",
          "[amqp][connection]") {
    scripted_server server;
    std::optional<bool> handshook;
    std::optional<codec::method> close;
    std::jthread server_thread([&] {
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
    std::jthread server_thread([&] {
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

namespace {
/// How an open connection ended after the server, once the handshake was done, ran `script`
/// and then read the client's next method.
struct scripted_end {
    bool handshook = false;
    std::optional<std::error_code> closed{};
    std::optional<codec::method> reply{};
};

scripted_end after_script(const std::function<void(scripted_server&)>& script) {
    scripted_server server;
    scripted_end end;
    std::jthread server_thread([&] {
        end.handshook = server.handshake(default_tune());
        if (!end.handshook)
            return;
        script(server);
        end.reply = server.read_method();
    });
    client c;
    REQUIRE(c.connect(server.port()) == std::error_code{});
    c.conn.async_wait_closed([&](std::error_code ec) { end.closed = ec; });
    CHECK(c.run_until([&] { return end.closed.has_value(); }));
    server_thread.join();
    REQUIRE(end.handshook);
    REQUIRE(end.closed.has_value());
    REQUIRE(end.reply.has_value());
    return end;
}
} // namespace

TEST_CASE("connection: a frame above frame_max closes the connection with frame_error",
          "[amqp][connection]") {
    const auto end = after_script([](scripted_server& server) {
        // A method frame header announcing 16 MiB on channel 0, and a few bytes of it.
        std::string frame{"\x01\x00\x00\x01\x00\x00\x00", 7};
        frame.append(64, 'x');
        (void)server.send(frame);
    });
    CHECK(*end.closed == letterbox::errc::frame_error);
    REQUIRE(std::holds_alternative<codec::connection_close>(*end.reply));
    CHECK(std::get<codec::connection_close>(*end.reply).reply_code == 501);
}

TEST_CASE("connection: a connection.close from the server is surfaced with its reply code",
          "[amqp][connection]") {
    const auto end = after_script([](scripted_server& server) {
        (void)server.send_method(codec::connection_close{
            320, "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'", 0,
            0});
    });
    CHECK(*end.closed == letterbox::errc::connection_forced);
    CHECK(std::holds_alternative<codec::connection_close_ok>(*end.reply));
}

TEST_CASE("connection: a late channel.close for a channel no longer open is ignored",
          "[amqp][connection]") {
    // RabbitMQ 3.10 can close a channel twice after a consumer timeout (docs/in-memory-
    // transport.md section 4): the second close, and a stray close-ok, leave the connection up.
    const auto end = after_script([](scripted_server& server) {
        (void)server.send_method(
            codec::channel_close{406,
                                 "PRECONDITION_FAILED - delivery acknowledgement on channel 7 "
                                 "timed out",
                                 0, 0},
            7);
        (void)server.send_method(codec::channel_close_ok{}, 8);
        (void)server.send_method(codec::connection_close{320, "CONNECTION_FORCED - bye", 0, 0});
    });
    // The connection lived until the server closed it: the stray frames were not an error.
    CHECK(*end.closed == letterbox::errc::connection_forced);
    CHECK(std::holds_alternative<codec::connection_close_ok>(*end.reply));
}

TEST_CASE("connection: amqps to a server that does not speak TLS fails the connect with an "
          "OpenSSL error",
          "[amqp][connection]") {
    scripted_server server;
    std::optional<bool> hello;
    std::jthread server_thread([&] {
        if (!server.accept())
            return;
        // A TLS record header (handshake, TLS 1.x) opens the ClientHello: the client starts
        // TLS before any AMQP byte. Answer as a plain AMQP server answers a bad header.
        std::string record;
        hello = server.read_exact(record, 5) && record[0] == '\x16' && record[1] == '\x03';
        (void)server.send(std::string("AMQP\x00\x00\x09\x01", 8));
        (void)server.wait_for_eof();
    });
    client c;
    letterbox::amqp::url u;
    u.tls = true;
    u.host = "127.0.0.1";
    u.port = server.port();
    std::optional<std::error_code> result;
    c.conn.async_connect(u, [&](std::error_code ec) { result = ec; });
    REQUIRE(c.run_until([&] { return result.has_value(); }));
    server_thread.join();
    CHECK(hello == true);
    INFO(result->message());
    CHECK(*result);
    CHECK(result->category() == boost::asio::error::get_ssl_category());
}

} // namespace unit_amqp_connection
