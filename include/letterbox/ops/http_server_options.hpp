// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// Options of an `http_server`. The defaults are the secure ones: loopback only, message
/// bodies and mutations behind a token (and disabled until one is set), the Host header
/// checked, and every limit on. docs/operations.md explains the security model.
struct http_server_options {
    /// The address to listen on: an IPv4 or IPv6 address (`127.0.0.1`, `::1`, `0.0.0.0`,
    /// `::`), or `localhost`, which means `127.0.0.1`. Other host names are not resolved: the
    /// constructor refuses them. Keep the loopback default unless a reverse proxy or a network
    /// policy protects the port. A non-loopback address needs a `token` (see
    /// `allow_non_loopback_without_token`).
    std::string address = "127.0.0.1";
    /// The TCP port; 0 asks the system for a free one (read it with `local_endpoint()`).
    std::uint16_t port = 9464;
    /// The bearer token (`Authorization: Bearer <token>`) that the mutating endpoints (POST,
    /// DELETE) and the reads of message bodies (`GET /dlq/{queue}`,
    /// `GET /dlq/{queue}/messages/{id}`) require, compared in constant time. Empty: those
    /// endpoints are disabled (403). Never logged nor echoed.
    std::string token{};
    /// Lets `GET /dlq/...` read message bodies without the token, for a dashboard on a
    /// developer's machine. Only for a loopback `address`: with another, the constructor
    /// refuses it. Off by default: any local process, and any web page the browser opens, can
    /// reach a loopback port (the Host check stops the pages, not the processes).
    bool loopback_reads_without_token = false;
    /// Lets the server listen on a non-loopback address without a token (the constructor
    /// refuses that otherwise), for a network that is protected in front of the server. The
    /// metadata endpoints (`/queues`, `/outbox`, `/outbox/lag`, `/consumers`,
    /// `/topology/findings`, `/metrics`) are then open to anyone who reaches the port; the
    /// server logs a warning.
    bool allow_non_loopback_without_token = false;
    /// The host names (without port, compared case-insensitively) that requests may name in
    /// their `Host` header, besides the server's own address, the address a connection
    /// reached, and `localhost` on a loopback connection: the names a reverse proxy or a DNS
    /// entry gives the server. A request naming another host gets 421 (this stops DNS
    /// rebinding: a web page whose name resolves to this server). The health endpoints
    /// answer whatever the Host, for probes and load balancers.
    std::vector<std::string> allowed_hosts{};
    /// The most bytes of a request's start line and headers; more gets 431 and the connection
    /// closes.
    std::size_t header_limit = 8 * 1024;
    /// The most bytes of a request body; more gets 413 and the connection closes.
    std::size_t body_limit = 1024 * 1024;
    /// The time a client has to send a whole request, from its first byte (and, on a new
    /// connection, for that first byte); late gets 408 and the connection closes.
    std::chrono::milliseconds read_timeout = std::chrono::seconds{5};
    /// How long a keep-alive connection may wait for its next request before it is closed.
    std::chrono::milliseconds idle_timeout = std::chrono::seconds{5};
    /// The time to write a response before the connection is dropped.
    std::chrono::milliseconds write_timeout = std::chrono::seconds{10};
    /// The most connections served at once. When a new connection arrives at the cap, the one
    /// that costs least to lose is closed to make room: a keep-alive connection waiting for
    /// its next request, else one that has sent nothing yet, else the one whose request
    /// started longest ago. Connections whose request is being handled or answered are never
    /// closed for it.
    std::size_t max_connections = 64;
    /// Connections accepted beyond `max_connections` when every connection is busy with a
    /// request, which only serve the health endpoints (other requests get 503): the liveness
    /// probe gets through however loaded the server is. 0: none.
    std::size_t reserved_connections = 4;
    /// The most bytes of a listing (`GET /dlq/{queue}`): the scan stops once the page's
    /// message bodies add up to this, and entries are added to the response while it stays
    /// under it (a page holds at least one entry). The response's `next_offset` says where
    /// the next page starts.
    std::size_t max_listing_bytes = 1024 * 1024;
    /// Bodies longer than this are cut in listings (at a character boundary for text), with
    /// `"body_truncated": true`, their size, and `message_url`, which serves the whole message.
    std::size_t listing_body_bytes = 4 * 1024;
    /// The most bytes of response bodies the server holds at once, across every connection,
    /// from when a response is built until it is written. A dead-letter listing, a message or
    /// an outbox listing that would take the total beyond it gets 503 with `Retry-After`, so
    /// clients that read slowly or never cannot make the server hold more.
    std::size_t max_response_bytes_in_flight = 32 * 1024 * 1024;
    /// How long a request waits for the outbox store (or the topology check,
    /// `http_server::set_topology_check`). Store calls run on a thread the server
    /// owns, never on its I/O; one that takes longer (a database locked by another process)
    /// gets 503 with `Retry-After` while the call finishes in the background (a retry may then
    /// still take effect: `GET /outbox` shows it).
    std::chrono::milliseconds store_timeout = std::chrono::seconds{2};
    /// How often the server samples the watched relay's lag and the watched consumers' delivery
    /// counts (`http_server::watch_relay`, `http_server::watch_consumers`), for the dashboard:
    /// the outbox panel's lag sparkline and the consumers' delivery rates. At least 1 ms: the
    /// constructor refuses less.
    std::chrono::milliseconds sample_interval = std::chrono::seconds{5};
    /// How many samples the server keeps, dropping the oldest: 120 samples of 5 s draw the
    /// last ten minutes. At least 2: the constructor refuses fewer.
    std::size_t samples_kept = 120;
    /// Where the server reports what it does (one line per request, listen, refusals,
    /// warnings). Lines never contain the `Authorization` header, the token, or a query
    /// string. Called on the server's strand, except the constructor's warning; may be empty.
    std::function<void(std::string_view)> log{};
};

} // namespace letterbox::ops
