// SPDX-License-Identifier: BSL-1.0
// amqp::connection against a hostile server: a scripted fake server on 127.0.0.1 sends what a
// rogue or broken broker could (frames above frame_max, undersized frames, a bad frame-end
// octet, unknown frame types, channel numbers above channel_max, a body longer than its
// header, lengths that wrap 32 bits, methods out of order), during the handshake and once the
// connection is open. Every case checks three things: the connection completes with the error
// the AMQP 0-9-1 reply code names (501 frame-error, 502 syntax-error, 503 command-invalid, 504
// channel-error, 505 unexpected-frame), the server reads a connection.close with that reply
// code, and the client then closes the socket (the server reads EOF) well before the server's
// deadline. ASan and UBSan watch for crashes and unbounded allocations.
//
// The cases named after an advisory are the connection-level regression tests for the client
// vulnerabilities of the reliability research (part d, D2 and G-13); the codec-level ones are
// in codec/hostile_input.cpp. CVE-2026-44235/-44236/-59986/-61547 are the same bugs as the
// rabbitmq-c advisories below, and CVE-2023-35789 (credentials on a command line) is not a
// protocol case.
//
// Cases that need an open channel receiving content drive detail::connection_core, the engine
// of amqp::connection, since the public connection has no channel API (amqp::transport does).
#include "fake_server.hpp"

#include "codec/bytes.hpp"

#include <letterbox/amqp/codec/content_header.hpp>
#include <letterbox/amqp/codec/frame.hpp>
#include <letterbox/amqp/codec/frame_writer.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/amqp/connection.hpp>
#include <letterbox/amqp/detail/connection_core.hpp>
#include <letterbox/error.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

namespace unit_amqp_hostile_server {

namespace {

using namespace std::chrono_literals;
namespace codec = letterbox::amqp::codec;
namespace detail = letterbox::amqp::detail;
using amqp_test::bytes;
using amqp_test::raw_frame;
using amqp_test::scripted_server;
using letterbox::errc;

/// How long the client may take to close the socket after the hostile bytes: it should close as
/// soon as its connection.close is written; the close timeout (3 s) plus a margin for a loaded
/// machine bounds it.
constexpr auto closing_deadline = detail::connection_core::close_timeout + 2s;

/// The tune most cases run with: channel_max 10, frame_max 4096 (the smallest allowed), no
/// heartbeats.
constexpr codec::connection_tune small_tune{10, 4096, 0};

// ---- frames written by hand -----------------------------------------------------------------

std::string method_frame(std::uint16_t channel, const codec::method& m) {
    codec::frame_writer w;
    REQUIRE_FALSE(w.set_frame_max(0));
    std::string out;
    REQUIRE_FALSE(w.write_method(out, channel, m));
    return out;
}

std::string header_frame(std::uint16_t channel, std::uint64_t body_size) {
    std::string payload;
    REQUIRE_FALSE(codec::encode(codec::content_header{.body_size = body_size}, payload));
    return raw_frame(2, channel, payload);
}

/// The 7-byte header of a frame announcing `size` payload bytes, and nothing after it.
std::string header_only(int type, std::uint16_t channel, std::uint32_t size) {
    return raw_frame(type, channel, "", size).substr(0, codec::frame_header_size);
}

const codec::basic_deliver deliver{.consumer_tag = "c", .delivery_tag = 1, .routing_key = "k"};

// ---- one case: a server script, the client's reaction, what the server saw ------------------

/// What the fake server saw after it sent something hostile: the client's next method (a
/// connection.close when the client explains itself), whether the client then closed the
/// socket, how long that took, and how many bytes it sent in between.
struct aftermath {
    std::optional<codec::method> reply;
    bool eof = false;
    std::chrono::steady_clock::duration until_eof{};
    std::size_t bytes_after_reply = 0;
};

aftermath observe(scripted_server& server) {
    aftermath a;
    const auto start = std::chrono::steady_clock::now();
    a.reply = server.read_method();
    a.eof = server.wait_for_eof();
    a.until_eof = std::chrono::steady_clock::now() - start;
    a.bytes_after_reply = server.bytes_before_eof_;
    return a;
}

struct outcome {
    bool scripted = false;                   ///< the server got as far as its hostile bytes
    std::error_code connected{};             ///< what async_connect completed with
    std::optional<std::error_code> closed{}; ///< what async_wait_closed completed with, if open
    aftermath seen{};
};

/// Runs `script` as the fake server (it returns whether it sent its hostile bytes), then
/// watches the client's reaction; the client connects with `u` (its port set to the server's)
/// and, once open, waits until the connection closes.
outcome play(const std::function<bool(scripted_server&)>& script,
             letterbox::amqp::url u = amqp_test::loopback_url(0)) {
    scripted_server server;
    u.port = server.port();
    outcome o;
    std::jthread server_thread([&] {
        o.scripted = script(server);
        if (o.scripted)
            o.seen = observe(server);
    });
    amqp_test::client c;
    o.connected = c.connect(u);
    if (!o.connected) {
        c.conn.async_wait_closed([&](std::error_code ec) { o.closed = ec; });
        (void)c.run_until([&] { return o.closed.has_value(); });
    }
    server_thread.join();
    return o;
}

/// An open connection, tuned with `tune`, to which the server then sends `hostile`.
outcome after_handshake(const std::string& hostile, codec::connection_tune tune = small_tune) {
    return play([&](scripted_server& s) { return s.handshake(tune) && s.send(hostile); });
}

/// Checks that the server read a connection.close with `reply_code`, then nothing but EOF, in
/// time.
void check_close_frame(const aftermath& seen, std::uint16_t reply_code) {
    REQUIRE(seen.reply.has_value());
    INFO("the client sent " << codec::name_of(*seen.reply));
    const auto* close = std::get_if<codec::connection_close>(&*seen.reply);
    REQUIRE(close != nullptr);
    INFO("reply text: " << close->reply_text);
    CHECK(close->reply_code == reply_code);
    CHECK(seen.eof);
    CHECK(seen.until_eof < closing_deadline);
    CHECK(seen.bytes_after_reply == 0);
}

/// The connection opened, then closed with `e`, telling the server `reply_code`.
void check_closed_with(const outcome& o, errc e, std::uint16_t reply_code) {
    REQUIRE(o.scripted);
    REQUIRE(o.connected == std::error_code{});
    REQUIRE(o.closed.has_value());
    CHECK(*o.closed == e);
    CHECK(letterbox::amqp_reply_code(e) == reply_code);
    check_close_frame(o.seen, reply_code);
}

/// The handshake failed with `e`, telling the server `reply_code`.
void check_refused_with(const outcome& o, errc e, std::uint16_t reply_code) {
    REQUIRE(o.scripted);
    CHECK(o.connected == e);
    CHECK(letterbox::amqp_reply_code(e) == reply_code);
    check_close_frame(o.seen, reply_code);
}

// ---- cases with an open channel: connection_core directly ------------------------------------

/// A connection_core on an io_context run on the test's thread.
struct core_client {
    boost::asio::io_context io{};
    std::shared_ptr<detail::connection_core> core = std::make_shared<detail::connection_core>(
        boost::asio::make_strand(io.get_executor()), "letterbox-test");

    core_client() = default;
    core_client(const core_client&) = delete;
    core_client& operator=(const core_client&) = delete;
    ~core_client() {
        boost::asio::post(core->strand(), [c = core] { c->abort(make_error_code(errc::closed)); });
        io.restart();
        io.poll();
    }

    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
        return amqp_test::run_until(io, done, timeout);
    }

    template <class F>
    void on_strand(F f) {
        boost::asio::post(core->strand(), std::move(f));
    }

    std::error_code connect(const letterbox::amqp::url& u) {
        std::optional<std::error_code> result;
        on_strand([&] { core->connect(u, [&](std::error_code ec) { result = ec; }); });
        if (!run_until([&] { return result.has_value(); }))
            return make_error_code(errc::timed_out);
        return *result;
    }

    /// Opens a channel whose asynchronous commands go to `on_command` from the moment it opens.
    std::shared_ptr<detail::channel_core>
    open_channel(std::function<void(codec::command&&)> on_command) {
        std::optional<std::error_code> result;
        std::shared_ptr<detail::channel_core> channel;
        on_strand([&] {
            core->open_channel([&](std::error_code ec, std::shared_ptr<detail::channel_core> ch) {
                result = ec;
                channel = std::move(ch);
                // Set here, on the strand, before the read loop hands out the next frame.
                if (channel)
                    channel->on_command = std::move(on_command);
            });
        });
        if (!run_until([&] { return result.has_value(); }))
            return nullptr;
        return channel;
    }

    std::optional<std::error_code> wait_closed() {
        std::optional<std::error_code> result;
        on_strand([&] { core->wait_closed([&](std::error_code ec) { result = ec; }); });
        (void)run_until([&] { return result.has_value(); });
        return result;
    }
};

/// The channel a connection opens first (number 1). The hostile bytes for it are
/// written on the test's thread (the frame builders assert), before the server thread starts.
constexpr std::uint16_t first_channel = 1;

/// The server's part up to an open channel: the handshake with `tune`, then channel.open-ok
/// for the client's channel.open on `first_channel`.
bool open_channel(scripted_server& s, codec::connection_tune tune) {
    if (!s.handshake(tune))
        return false;
    std::uint16_t channel = 0;
    auto open = s.read_method(&channel);
    return open && std::holds_alternative<codec::channel_open>(*open) && channel == first_channel &&
           s.send_method(codec::channel_open_ok{}, channel);
}

struct channel_outcome {
    outcome base{};
    bool channel_opened = false;
    std::vector<codec::command> commands{}; ///< what the channel received before the close
};

/// An open connection with one open channel (`first_channel`), to which the server then sends
/// `hostile`.
channel_outcome on_open_channel(const std::string& hostile,
                                codec::connection_tune tune = small_tune) {
    scripted_server server;
    channel_outcome o;
    std::jthread server_thread([&] {
        o.base.scripted = open_channel(server, tune) && server.send(hostile);
        if (o.base.scripted)
            o.base.seen = observe(server);
    });
    core_client c;
    o.base.connected = c.connect(amqp_test::loopback_url(server.port()));
    if (!o.base.connected) {
        o.channel_opened = c.open_channel([&](codec::command&& cmd) {
            o.commands.push_back(std::move(cmd));
        }) != nullptr;
        o.base.closed = c.wait_closed();
    }
    server_thread.join();
    return o;
}

} // namespace

// ---- after the handshake ----------------------------------------------------------------------

TEST_CASE("hostile server: a frame one byte above frame_max is a frame_error (501)",
          "[amqp][connection][hostile]") {
    const auto frame_max = GENERATE(std::uint32_t{4096}, std::uint32_t{131072});
    INFO("frame_max " << frame_max);
    // A method frame on channel 0 whose size is frame_max - 8 + 1, and a few bytes of it.
    const auto hostile = header_only(1, 0, frame_max - 7) + std::string(64, 'x');
    const auto o = after_handshake(hostile, codec::connection_tune{10, frame_max, 0});
    check_closed_with(o, errc::frame_error, 501);
}

TEST_CASE("hostile server: undersized frames are a frame_error (501)",
          "[amqp][connection][hostile]") {
    const auto hostile = GENERATE(raw_frame(1, 0, bytes({0x00, 0x0A})), // method < 4 bytes
                                  raw_frame(1, 0, ""),                  // empty method
                                  raw_frame(8, 0, "x"));                // heartbeat with a byte
    check_closed_with(after_handshake(hostile), errc::frame_error, 501);
}

TEST_CASE("hostile server: a bad frame-end octet is a frame_error (501)",
          "[amqp][connection][hostile]") {
    auto frame = method_frame(0, codec::connection_blocked{"low on memory"});
    const auto end = GENERATE(0x00, 0xCD, 0xCF, 0xFF);
    frame.back() = static_cast<char>(end);
    INFO("frame-end " << end);
    check_closed_with(after_handshake(frame), errc::frame_error, 501);
}

TEST_CASE("hostile server: an unknown frame type is a frame_error (501)",
          "[amqp][connection][hostile]") {
    const int type = GENERATE(0, 4, 5, 7, 9, 0x41, 0xCE, 0xFF);
    INFO("type " << type);
    check_closed_with(after_handshake(raw_frame(type, 0, "")), errc::frame_error, 501);
}

TEST_CASE("hostile server: a channel number above channel_max is a channel_error (504)",
          "[amqp][connection][hostile]") {
    const std::uint16_t channel = GENERATE(11, 12, 2048, 65535);
    INFO("channel " << channel << ", channel_max 10");
    const auto o = after_handshake(method_frame(channel, codec::basic_ack{.delivery_tag = 1}));
    check_closed_with(o, errc::channel_error, 504);
}

TEST_CASE("hostile server: a frame for a channel the client did not open is a channel_error "
          "(504)",
          "[amqp][connection][hostile]") {
    // Within channel_max (10) but never opened: no per-channel state is made for it.
    const std::uint16_t channel = GENERATE(1, 10);
    const auto o = after_handshake(method_frame(channel, codec::basic_ack{.delivery_tag = 1}) +
                                   header_frame(channel, 3));
    check_closed_with(o, errc::channel_error, 504);
}

TEST_CASE("hostile server: a heartbeat on a channel other than 0 is a frame_error (501)",
          "[amqp][connection][hostile]") {
    check_closed_with(after_handshake(raw_frame(8, 1, "")), errc::frame_error, 501);
}

TEST_CASE("hostile server: a frame size that wraps 32 bits is refused from the header alone",
          "[amqp][connection][hostile]") {
    // The server sends a 7-byte header and then waits: the client must refuse it without
    // waiting for (or reserving) gigabytes. size + 7 and size + 8 wrap to small numbers for
    // some of these.
    const std::uint32_t size =
        GENERATE(0xFFFFFFFFU, 0xFFFFFFF9U, 0xFFFFFFF8U, 0xFFFFFFF0U, 0x80000000U, 0x7FFFFFFFU);
    const int type = GENERATE(1, 2, 3);
    INFO("type " << type << ", size " << size);
    const auto o = after_handshake(header_only(type, type == 1 ? 0 : 1, size));
    check_closed_with(o, errc::frame_error, 501);
}

TEST_CASE("hostile server: connection methods on a channel and channel methods on channel 0 "
          "are command_invalid (503)",
          "[amqp][connection][hostile]") {
    SECTION("a basic method on channel 0") {
        check_closed_with(after_handshake(method_frame(0, codec::basic_ack{.delivery_tag = 1})),
                          errc::command_invalid, 503);
    }
    SECTION("a connection method on an open channel") {
        const auto o = on_open_channel(
            method_frame(first_channel, codec::connection_blocked{"low on memory"}));
        CHECK(o.channel_opened);
        check_closed_with(o.base, errc::command_invalid, 503);
    }
}

TEST_CASE("hostile server: a body longer than its header declares is an unexpected_frame (505)",
          "[amqp][connection][hostile]") {
    // The header declares 4 bytes; the body frames carry 3 + 2, or 5 at once.
    const auto ch = first_channel;
    const auto body =
        GENERATE_REF(raw_frame(3, ch, "abc") + raw_frame(3, ch, "de"), raw_frame(3, ch, "abcde"));
    const auto o = on_open_channel(method_frame(ch, deliver) + header_frame(ch, 4) + body);
    CHECK(o.channel_opened);
    CHECK(o.commands.empty());
    check_closed_with(o.base, errc::unexpected_frame, 505);
}

TEST_CASE("hostile server: content out of sequence is an unexpected_frame (505)",
          "[amqp][connection][hostile]") {
    const auto ch = first_channel;
    const auto hostile = GENERATE_REF(
        // a content header without a method
        header_frame(ch, 3),
        // a body frame without a header
        method_frame(ch, deliver) + raw_frame(3, ch, "abc"),
        // a method while the body is expected
        method_frame(ch, deliver) + header_frame(ch, 3) +
            method_frame(ch, codec::basic_ack{.delivery_tag = 1}),
        // a body frame after the message was complete
        method_frame(ch, deliver) + header_frame(ch, 3) + raw_frame(3, ch, "abc") +
            raw_frame(3, ch, "d"));
    const auto o = on_open_channel(hostile);
    CHECK(o.channel_opened);
    check_closed_with(o.base, errc::unexpected_frame, 505);
}

// ---- during the handshake ---------------------------------------------------------------------

TEST_CASE("hostile server: a server that does not speak AMQP is refused with frame_error (501)",
          "[amqp][connection][hostile]") {
    const auto o = play([](scripted_server& s) {
        std::string header;
        return s.accept() && s.read_exact(header, 8) &&
               s.send("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    check_refused_with(o, errc::frame_error, 501);
}

TEST_CASE("hostile server: a frame above 4096 bytes before connection.tune is refused",
          "[amqp][connection][hostile]") {
    // Before tune both peers accept frames of frame-min-size (4096) only.
    const auto o =
        play([](scripted_server& s) { return s.greet() && s.send(header_only(1, 0, 4089)); });
    check_refused_with(o, errc::frame_error, 501);
}

TEST_CASE("hostile server: a channel frame during the handshake is an unexpected_frame (505)",
          "[amqp][connection][hostile]") {
    const auto hostile = method_frame(1, codec::channel_open_ok{});
    const auto o = play([&](scripted_server& s) { return s.greet() && s.send(hostile); });
    check_refused_with(o, errc::unexpected_frame, 505);
}

TEST_CASE("hostile server: connection methods out of order in the handshake are command_invalid "
          "(503)",
          "[amqp][connection][hostile]") {
    SECTION("connection.start twice") {
        const auto again =
            method_frame(0, codec::connection_start{.mechanisms = "PLAIN", .locales = "en_US"});
        const auto o = play([&](scripted_server& s) { return s.greet() && s.send(again); });
        check_refused_with(o, errc::command_invalid, 503);
    }
    SECTION("connection.open-ok before connection.tune") {
        const auto o = play([](scripted_server& s) {
            return s.greet() && s.send_method(codec::connection_open_ok{});
        });
        check_refused_with(o, errc::command_invalid, 503);
    }
    SECTION("connection.tune before connection.start") {
        const auto o = play([](scripted_server& s) {
            std::string header;
            return s.accept() && s.read_exact(header, 8) && s.send_method(small_tune);
        });
        check_refused_with(o, errc::command_invalid, 503);
    }
    SECTION("connection.tune twice") {
        const auto o = play([](scripted_server& s) {
            return s.greet() && s.tune(small_tune) &&
                   s.send_method(codec::connection_tune{10, 8192, 0});
        });
        check_refused_with(o, errc::command_invalid, 503);
    }
}

TEST_CASE("hostile server: frame_max 4096 is accepted, and the server cannot raise the client's "
          "limit",
          "[amqp][connection][hostile]") {
    const auto proposed = GENERATE(std::uint32_t{4096}, std::uint32_t{0}, 0xFFFFFFFFU);
    INFO("server frame_max " << proposed);
    scripted_server server;
    std::optional<bool> tuned;
    std::optional<codec::method> close;
    std::jthread server_thread([&] {
        tuned = server.handshake(codec::connection_tune{10, proposed, 0});
        if (!*tuned)
            return;
        close = server.read_method();
        (void)server.send_method(codec::connection_close_ok{});
    });
    amqp_test::client c;
    const auto connected = c.connect(server.port());
    std::optional<std::error_code> closed;
    c.conn.async_close([&](std::error_code ec) { closed = ec; });
    CHECK(c.run_until([&] { return closed.has_value(); }));
    server_thread.join();

    REQUIRE(tuned.value_or(false));
    CHECK(connected == std::error_code{});
    CHECK(server.tune_ok_.frame_max == (proposed == 4096 ? 4096U : 131072U));
    REQUIRE(close.has_value());
    CHECK(std::holds_alternative<codec::connection_close>(*close));
}

// ---- regression tests for the client advisories (D2, G-13) ------------------------------------

TEST_CASE("CVE-2019-18609: a frame size near 2^32 closes the connection, nothing is buffered",
          "[amqp][connection][hostile]") {
    const std::uint32_t size = GENERATE(0xFFFFFFFFU, 0xFFFFFFF8U, 0x7FFFFFFFU);
    INFO("size " << size);
    SECTION("once open") {
        check_closed_with(after_handshake(header_only(3, 1, size) + std::string(64, 'A')),
                          errc::frame_error, 501);
    }
    SECTION("during the handshake, in place of connection.tune") {
        const auto o = play([&](scripted_server& s) {
            return s.greet() && s.send(header_only(1, 0, size) + std::string(64, 'A'));
        });
        check_refused_with(o, errc::frame_error, 501);
    }
}

TEST_CASE("GHSA-9mmv-r8g3-qp46: an undersized frame during login is a frame_error (501)",
          "[amqp][connection][hostile]") {
    SECTION("a 2-byte method frame in place of connection.tune") {
        const auto o = play([](scripted_server& s) {
            return s.greet() && s.send(raw_frame(1, 0, bytes({0x00, 0x0A})));
        });
        check_refused_with(o, errc::frame_error, 501);
    }
    SECTION("a connection.start cut short inside its server-properties table") {
        const auto o = play([](scripted_server& s) {
            std::string header;
            return s.accept() && s.read_exact(header, 8) &&
                   s.send(raw_frame(
                       1, 0, bytes({0x00, 0x0A, 0x00, 0x0A, 0x00, 0x09, 0x00, 0x00, 0x01, 0x00})));
        });
        check_refused_with(o, errc::frame_error, 501);
    }
    SECTION("a content header frame of 13 bytes on an open channel") {
        const auto o = on_open_channel(method_frame(first_channel, deliver) +
                                       raw_frame(2, first_channel, std::string(13, '\0')));
        check_closed_with(o.base, errc::frame_error, 501);
    }
}

TEST_CASE("GHSA-jh48-qjf5-fx5v: connection.tune with frame_max below 4096 is a syntax_error (502)",
          "[amqp][connection][hostile]") {
    const auto frame_max = GENERATE(std::uint32_t{1}, std::uint32_t{512}, std::uint32_t{4095});
    INFO("server frame_max " << frame_max);
    const auto o = play([&](scripted_server& s) {
        return s.greet() && s.send_method(codec::connection_tune{10, frame_max, 0});
    });
    check_refused_with(o, errc::syntax_error, 502);
}

TEST_CASE("GHSA-jgjf-7fwf-f3c7: byte-field lengths that would wrap an offset are a frame_error "
          "(501)",
          "[amqp][connection][hostile]") {
    SECTION("connection.start whose mechanisms longstr claims 0xFFFFFFFF bytes") {
        const auto start = bytes({0x00, 0x0A, 0x00, 0x0A, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0xFF,
                                  0xFF, 0xFF, 0xFF, 'P', 'L', 'A', 'I', 'N'});
        const auto o = play([&](scripted_server& s) {
            std::string header;
            return s.accept() && s.read_exact(header, 8) && s.send(raw_frame(1, 0, start));
        });
        check_refused_with(o, errc::frame_error, 501);
    }
    SECTION("connection.close whose reply-text shortstr runs past the frame") {
        // reply-code 320, reply-text length 255 with 3 bytes of text.
        const auto close = bytes({0x00, 0x0A, 0x00, 0x32, 0x01, 0x40, 0xFF, 'b', 'y', 'e'});
        check_closed_with(after_handshake(raw_frame(1, 0, close)), errc::frame_error, 501);
    }
    SECTION("a content header whose headers table claims 0xFFFFFFFC bytes") {
        const auto header = bytes(
            {0x00, 0x3C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00, 0xFF, 0xFF, 0xFF, 0xFC, 0x01});
        const auto o = on_open_channel(method_frame(first_channel, deliver) +
                                       raw_frame(2, first_channel, header));
        check_closed_with(o.base, errc::frame_error, 501);
    }
}

TEST_CASE("GHSA-hfjv-vcp3-39wh: a body far above frame_max is sent in frames of at most "
          "frame_max",
          "[amqp][connection][hostile]") {
    const std::string body = [] {
        std::string b(25 * 4096 + 17, '\0');
        for (std::size_t i = 0; i < b.size(); ++i)
            b[i] = static_cast<char>('a' + i % 26);
        return b;
    }();
    scripted_server server;
    std::optional<bool> opened;
    std::size_t frames = 0;
    std::size_t largest = 0;
    bool ends_ok = true;
    bool types_ok = true;
    std::optional<std::uint64_t> declared;
    std::string received;
    std::optional<codec::method> after;
    bool eof = false;
    std::jthread server_thread([&] {
        opened = open_channel(server, small_tune);
        if (!*opened)
            return;
        // basic.publish, its content header, then body frames up to the declared size.
        for (int n = 0; n < 10000; ++n) {
            auto f = server.read_frame();
            if (!f)
                return;
            if (f->type == 8)
                continue;
            ++frames;
            largest = std::max(largest, f->wire_size());
            ends_ok = ends_ok && f->end == codec::frame_end;
            const int expected_type = frames == 1 ? 1 : frames == 2 ? 2 : 3;
            types_ok = types_ok && f->type == expected_type && f->channel == first_channel;
            if (f->type == 2) {
                std::error_code ec;
                declared = codec::decode_content_header(f->payload, ec).body_size;
                if (ec)
                    return;
            }
            if (f->type == 3)
                received += f->payload;
            if (declared && received.size() >= *declared)
                break;
        }
        // The refused publishes wrote nothing: the next method is the client's close.
        after = server.read_method();
        (void)server.send_method(codec::connection_close_ok{});
        eof = server.wait_for_eof();
    });
    core_client c;
    REQUIRE(c.connect(amqp_test::loopback_url(server.port())) == std::error_code{});
    auto ch = c.open_channel({});
    REQUIRE(ch != nullptr);
    std::optional<std::error_code> published;
    std::optional<std::error_code> oversized_header;
    std::optional<std::error_code> oversized_key;
    c.on_strand([&] {
        CHECK(c.core->frame_max() == 4096);
        published = ch->publish(codec::basic_publish{.exchange = "", .routing_key = "q"}, {}, body);
        // A content header that cannot fit in one frame, and a routing key over 255 bytes: both
        // refused as the caller's errors, with nothing queued, and the connection stays open.
        codec::basic_properties big;
        big.headers.emplace();
        big.headers->set("padding", std::string(5000, 'p'));
        oversized_header = ch->publish(codec::basic_publish{.routing_key = "q"}, big, "x");
        oversized_key =
            ch->publish(codec::basic_publish{.routing_key = std::string(256, 'k')}, {}, "x");
    });
    REQUIRE(c.run_until([&] { return oversized_key.has_value(); }));
    std::optional<std::error_code> closed;
    c.on_strand([&] { c.core->close([&](std::error_code ec) { closed = ec; }); });
    CHECK(c.run_until([&] { return closed.has_value(); }));
    server_thread.join();

    REQUIRE(opened.value_or(false));
    CHECK(*published == std::error_code{});
    CHECK(*oversized_header == errc::invalid_argument);
    CHECK(*oversized_key == errc::invalid_argument);
    CHECK(frames == 2 + (body.size() + 4087) / 4088);
    CHECK(largest <= 4096);
    CHECK(largest == 4096); // full frames are used
    CHECK(ends_ok);
    CHECK(types_ok);
    CHECK(declared == std::optional<std::uint64_t>(body.size()));
    CHECK(received == body);
    REQUIRE(after.has_value());
    REQUIRE(std::holds_alternative<codec::connection_close>(*after));
    CHECK(std::get<codec::connection_close>(*after).reply_code == 200);
    CHECK(eof);
    CHECK(closed == std::error_code{});
}

TEST_CASE("GHSA-5fp7-wg2f-hhgp: unknown frame types close the connection, channel numbers are "
          "bounded",
          "[amqp][connection][hostile]") {
    SECTION("an unknown frame type is not ignored") {
        const int type = GENERATE(4, 0x41);
        check_closed_with(after_handshake(raw_frame(type, 1, std::string(100, 'x'))),
                          errc::frame_error, 501);
    }
    SECTION("frames for many channel numbers close at the first one not opened") {
        std::string stream;
        for (std::uint16_t ch = 1; ch <= 2047; ++ch)
            stream += method_frame(ch, codec::basic_ack{.delivery_tag = ch});
        // The first frame is for the open channel (an ack the client never asked for goes to
        // on_command), the second for channel 2, never opened.
        const auto o = on_open_channel(stream, codec::connection_tune{2047, 131072, 0});
        CHECK(o.channel_opened);
        check_closed_with(o.base, errc::channel_error, 504);
        CHECK(o.commands.size() == 1);
    }
}

TEST_CASE("CVE-2026-79921 (GHSA-6c5v-hqjr-5xxp): a body frame above frame_max is a frame_error "
          "(501)",
          "[amqp][connection][hostile]") {
    // A body frame of exactly frame_max is delivered; one byte more closes the connection.
    const auto ch = first_channel;
    const auto o =
        on_open_channel(method_frame(ch, deliver) + header_frame(ch, 4088) +
                        raw_frame(3, ch, std::string(4088, 'x')) + method_frame(ch, deliver) +
                        header_frame(ch, 100000) + raw_frame(3, ch, std::string(4089, 'y')));
    CHECK(o.channel_opened);
    REQUIRE(o.commands.size() == 1);
    CHECK(o.commands[0].body == std::string(4088, 'x'));
    check_closed_with(o.base, errc::frame_error, 501);
}

TEST_CASE("CVE-2023-46120: a delivery declaring a body above the maximum message size closes "
          "the connection at its header",
          "[amqp][connection][hostile]") {
    // 200 MiB declared, above the 128 MiB default; the server then sends nothing more.
    const auto o = on_open_channel(method_frame(first_channel, deliver) +
                                   header_frame(first_channel, 200ULL * 1024 * 1024));
    CHECK(o.channel_opened);
    CHECK(o.commands.empty());
    check_closed_with(o.base, errc::content_too_large, 311);
}

} // namespace unit_amqp_hostile_server
