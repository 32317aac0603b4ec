// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/broker_info.hpp>
#include <letterbox/amqp/detail/connection_core.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

/// One AMQP 0-9-1 client connection to a broker, over TCP (or TLS) on Boost.Asio.
///
/// `async_connect` resolves and connects to the URL's `host` and `port` (its first endpoint:
/// failing over to `more_endpoints` is `amqp::transport`'s job), sends the protocol header and
/// runs the handshake:
/// connection.start/start-ok with SASL PLAIN (user and password from the URL) and client
/// properties announcing the capabilities letterbox relies on (publisher_confirms,
/// consumer_cancel_notify, basic.nack, connection.blocked, exchange_exchange_bindings,
/// authentication_failure_close), connection.tune/tune-ok (frame_max, channel_max and
/// heartbeat: the URL's values, or 128 KiB, 2047 and 60 s, negotiated down to the server's),
/// then connection.open/open-ok with the URL's vhost. The whole handshake is bounded by the
/// URL's `connection_timeout` (30 s by default): `errc::timed_out`.
///
/// Once open, a read loop cuts the stream into frames (`codec::frame_reader`, which enforces
/// frame_max and channel_max) and commands, and a write queue coalesces every frame queued
/// while a write is in flight into the next single socket write. Heartbeats flow both ways: one
/// is sent when nothing was written for half the interval, and a peer silent for two intervals
/// is declared dead (`errc::timed_out`).
///
/// How it ends, as the error `async_wait_closed` reports:
/// - `errc::closed` after `async_close` (connection.close 200 and its close-ok);
/// - the broker's connection.close: the `errc` of its reply code (320 `connection_forced`,
///   403 `access_refused`, ...; `connection_closed` for codes letterbox does not name);
/// - a protocol error in what the broker sent: the connection is closed with the matching reply
///   code (`amqp_reply_code`), and the error is that code's `errc` (`frame_error` for a frame
///   above frame_max, ...);
/// - `errc::connection_closed` when the socket is closed under it; `errc::timed_out` after
///   missed heartbeats; an Asio error for a failed connect.
///
/// `amqps://` URLs run the same protocol over TLS (Asio SSL on OpenSSL), set up after the TCP
/// connect and within the same `connection_timeout`: TLS 1.2 or later, the broker's
/// certificate checked against the URL's `cacertfile` (or the system's CAs) and its host name
/// (or `server_name_indication`) unless `verify=verify_none`, SNI for host names, and a client
/// certificate from `certfile`/`keyfile`. A TLS failure completes the connect with OpenSSL's
/// error (`boost::asio::error::get_ssl_category()`).
///
/// Channels, publishing and consuming are what `amqp::transport` builds on this connection.
///
/// Thread safety: the object may be used from any thread; its work runs on a strand of the
/// executor it was given. Completions run on the token's associated executor (by default the
/// connection's).
class connection {
public:
    using executor_type = boost::asio::any_io_executor;

    explicit connection(executor_type ex, std::string name = "letterbox")
        : ex_(std::move(ex))
        , core_(std::make_shared<detail::connection_core>(boost::asio::make_strand(ex_),
                                                          std::move(name))) {}

    connection(connection&&) noexcept = default;
    connection& operator=(connection&&) noexcept = default;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    /// Closes the socket without a close handshake if it is still open.
    ~connection();

    executor_type get_executor() const { return ex_; }

    /// Connects to `u` and runs the handshake; completes with `void(error_code)`.
    template <class Token>
    auto async_connect(const url& u, Token&& token);

    /// Closes the connection (connection.close 200); completes with `void(error_code)`,
    /// success once closed. Idempotent.
    template <class Token>
    auto async_close(Token&& token);

    /// Completes with `void(error_code)` when the connection closes, with the reason (see
    /// above); at once if it is already closed.
    template <class Token>
    auto async_wait_closed(Token&& token);

    /// Negotiated limits and server facts, read on the connection's strand; completes with
    /// `void(error_code, connection::info)` (`errc::connection_closed` if not open).
    struct info {
        std::uint32_t frame_max = 0;
        std::uint16_t channel_max = 0;
        std::chrono::seconds heartbeat{0};
        bool blocked = false;
        field_table server_properties{};

        /// The broker's product and version (from `server_properties`), and the broker
        /// profile letterbox assumes for them.
        broker_info broker() const {
            return broker_info::from_server_properties(server_properties);
        }
    };
    template <class Token>
    auto async_info(Token&& token);

private:
    template <class Signature, class Token, class Op>
    auto run(Token&& token, Op op);

    executor_type ex_;
    std::shared_ptr<detail::connection_core> core_;
};

} // namespace letterbox::amqp

#include <letterbox/amqp/impl/connection.hpp>
