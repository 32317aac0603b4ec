// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/basic_properties.hpp>
#include <letterbox/amqp/codec/command.hpp>
#include <letterbox/amqp/codec/content_assembler.hpp>
#include <letterbox/amqp/codec/frame.hpp>
#include <letterbox/amqp/codec/frame_reader.hpp>
#include <letterbox/amqp/codec/frame_writer.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/amqp/codec/negotiate.hpp>
#include <letterbox/amqp/detail/channel_core.hpp>
#include <letterbox/amqp/detail/reply_code.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/unique_function.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/version.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

/// The engine of an AMQP 0-9-1 client connection over TCP (or TLS for `amqps://`, with
/// Asio SSL on OpenSSL), on one strand: the handshake,
/// the read loop (frame_reader, one content_assembler per channel), the coalescing write
/// queue, heartbeats, channels and the close handshake. `amqp::connection` and
/// `amqp::transport` are built on it. Every member function must be called on `strand()`.
class connection_core : public std::enable_shared_from_this<connection_core> {
public:
    using strand_type = boost::asio::strand<boost::asio::any_io_executor>;
    using done_handler = letterbox::detail::unique_function<void(std::error_code)>;
    using channel_handler =
        letterbox::detail::unique_function<void(std::error_code, std::shared_ptr<channel_core>)>;
    enum class state { idle, connecting, handshaking, open, closing, closed };

    /// Client-side defaults used when the URL does not say.
    static constexpr std::uint32_t default_frame_max = 131072;
    static constexpr std::uint16_t default_channel_max = 2047;
    static constexpr std::chrono::seconds default_heartbeat{60};
    static constexpr std::chrono::milliseconds default_connection_timeout{30000};
    /// How long a close handshake may take before the socket is closed anyway.
    static constexpr std::chrono::milliseconds close_timeout{3000};

    /// `uid_base` is where the uids of this connection's channels start: an owner that makes
    /// several connections gives each a different base (the transport uses generation << 32).
    explicit connection_core(strand_type strand, std::string name = "letterbox",
                             std::uint64_t uid_base = 0)
        : strand_(std::move(strand))
        , name_(std::move(name))
        , next_uid_(uid_base)
        , socket_(strand_)
        , resolver_(strand_)
        , timer_(strand_)
        , heartbeat_timer_(strand_) {}

    const strand_type& strand() const noexcept { return strand_; }
    state current_state() const noexcept { return state_; }
    bool is_open() const noexcept { return state_ == state::open; }
    /// Whether the broker blocked publishing (connection.blocked), and why.
    bool blocked() const noexcept { return blocked_; }
    const std::string& blocked_reason() const noexcept { return blocked_reason_; }
    /// Negotiated values (valid once open).
    std::uint32_t frame_max() const noexcept { return writer_.frame_max(); }
    std::uint16_t channel_max() const noexcept { return channel_max_; }
    std::chrono::seconds heartbeat() const noexcept { return heartbeat_; }
    /// The server's properties from connection.start.
    const field_table& server_properties() const noexcept { return server_properties_; }
    /// The error the connection closed with (errc::closed after a close asked by the owner).
    std::error_code error() const noexcept { return error_; }
    /// The reply text of the broker's connection.close (empty if the broker sent none), e.g.
    /// `NOT_IMPLEMENTED - requeue=false`.
    const std::string& close_text() const noexcept { return close_text_; }

    /// Connects, sends the protocol header and runs the handshake up to connection.open-ok.
    void connect(const url& u, done_handler done);
    /// Closes the connection (connection.close 200 and its close-ok); `done` gets success.
    void close(done_handler done);
    /// Closes the socket at once, without a close handshake (as a lost network would).
    void abort(std::error_code ec) { finish(ec); }
    /// `done` gets the error the connection closes with (at once if already closed).
    void wait_closed(done_handler done) {
        if (state_ == state::closed) {
            boost::asio::post(strand_, [d = std::move(done), e = error_]() mutable { d(e); });
            return;
        }
        closed_waiters_.push_back(std::move(done));
    }
    /// Opens a channel on the next free number after the last one handed out (from 1).
    void open_channel(channel_handler done);

    /// Called once when an open connection closes, for any reason (errc::closed when asked).
    std::function<void(std::error_code)> on_closed;
    /// Called on connection.blocked (true, reason) and connection.unblocked (false, "").
    std::function<void(bool, const std::string&)> on_blocked;

    // ---- used by channel_core ----
    std::error_code write_method(std::uint16_t channel, const codec::method& m);
    std::error_code write_content(std::uint16_t channel, const codec::method& m,
                                  const codec::basic_properties& props, std::string_view body);
    void release_channel(std::uint16_t id) { channels_.erase(id); }

private:
    using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>;

    void start_connect(const boost::asio::ip::tcp::resolver::results_type& endpoints);
    std::error_code start_tls();
    void start_amqp();
    template <class Handler>
    void read_some(boost::asio::mutable_buffer b, Handler&& h);
    template <class Handler>
    void write_all(boost::asio::const_buffer b, Handler&& h);
    void do_read();
    void on_read(std::error_code ec, std::size_t n);
    void handle_frame(const codec::frame_view& f);
    void handle_connection_method(codec::command&& cmd);
    static bool is_stray_channel_close(const codec::frame_view& f);
    void protocol_error(std::error_code ec, const std::string& text);
    void close_after_write(std::error_code ec);
    void flush();
    void on_written(std::error_code ec);
    void start_heartbeat();
    void on_heartbeat_tick();
    void finish(std::error_code ec);
    field_table client_properties() const;

    strand_type strand_;
    std::string name_;
    std::uint64_t next_uid_;
    boost::asio::ip::tcp::socket socket_;
    boost::asio::ip::tcp::resolver resolver_;
    // amqps: the TLS context and the stream over socket_ (absent for amqp://).
    std::optional<boost::asio::ssl::context> tls_context_{};
    std::optional<tls_stream> tls_{};
    boost::asio::steady_timer timer_;           // connect and close deadlines
    boost::asio::steady_timer heartbeat_timer_; // heartbeat ticks
    url url_{};
    state state_ = state::idle;
    // The handshake method the server may send next: connection.start, then connection.tune
    // (after start-ok), then connection.open-ok (after tune-ok and open). Anything else while
    // handshaking, a repeated start or tune included, is command_invalid.
    enum class handshake_step { start, tune, open_ok };
    handshake_step handshake_step_ = handshake_step::start;
    std::error_code error_{};
    std::string close_text_{};
    done_handler connect_done_{};
    std::vector<done_handler> close_done_{};
    std::vector<done_handler> closed_waiters_{};
    // Set when the connection must close once the output is written (a close-ok we owe, or a
    // connection.close for a protocol error).
    std::optional<std::error_code> close_after_write_{};

    codec::frame_reader reader_{};
    codec::frame_writer writer_{};
    codec::content_assembler channel0_{};
    std::string out_{};     // frames waiting for the next write
    std::string writing_{}; // the frames of the write in flight
    bool write_in_flight_ = false;
    bool flush_posted_ = false;

    std::map<std::uint16_t, std::shared_ptr<channel_core>> channels_{};
    std::uint16_t channel_max_ = default_channel_max;
    std::uint16_t last_channel_ = 0; // the number open_channel handed out last
    std::chrono::seconds heartbeat_{0};
    std::chrono::steady_clock::time_point last_read_{};
    std::chrono::steady_clock::time_point last_write_{};
    field_table server_properties_{};
    bool blocked_ = false;
    std::string blocked_reason_{};
};

} // namespace letterbox::amqp::detail

#if LETTERBOX_HEADER_ONLY
#include <letterbox/amqp/detail/impl/connection_core.hpp>
#endif
