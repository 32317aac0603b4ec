// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace letterbox::ops {

/// Options of an `http_server`. The defaults are the secure ones: loopback only, mutations
/// disabled until a token is set, and every limit on.
struct http_server_options {
    /// The address to listen on. Keep the default unless a reverse proxy or a network policy
    /// protects the port: the endpoint shows message bodies.
    std::string address = "127.0.0.1";
    /// The TCP port; 0 asks the system for a free one (read it with `local_endpoint()`).
    std::uint16_t port = 9464;
    /// The bearer token that the mutating endpoints (POST, DELETE) require, compared in
    /// constant time. Empty: mutations are disabled (403). Never logged nor echoed.
    std::string token{};
    /// The most bytes of a request's start line and headers; more gets 431 and the connection
    /// closes.
    std::size_t header_limit = 8 * 1024;
    /// The most bytes of a request body; more gets 413 and the connection closes.
    std::size_t body_limit = 1024 * 1024;
    /// The time a client has to send a whole request, from its first byte (and, on a new
    /// connection, for that first byte); late gets 408 and the connection closes.
    std::chrono::milliseconds read_timeout = std::chrono::seconds{10};
    /// How long a keep-alive connection may wait for its next request before it is closed.
    std::chrono::milliseconds idle_timeout = std::chrono::seconds{30};
    /// The time to write a response before the connection is dropped.
    std::chrono::milliseconds write_timeout = std::chrono::seconds{10};
    /// The most connections served at once; a connection over the cap is closed at once.
    std::size_t max_connections = 64;
    /// Where the server reports what it does (one line per request, listen, refusals).
    /// Lines never contain the `Authorization` header, the token, or a query string. Called on
    /// the server's strand; may be empty.
    std::function<void(std::string_view)> log{};
};

} // namespace letterbox::ops
