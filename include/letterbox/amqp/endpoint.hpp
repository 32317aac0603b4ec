// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

/// One broker address: a host (a name, an IPv4 address, or an IPv6 address without brackets)
/// and a TCP port. A `url` holds one or more (`url::endpoints()`); an `amqp::transport` given
/// several connects to one at a time and fails over to the next (docs/amqp.md, "Failover").
///
/// Example:
///
///     auto u = amqp::parse_url("amqp://ops@127.0.0.1/orders");
///     u.set_endpoints({{"rabbit-1", 5672}, {"rabbit-2", 5672}, {"::1", 5674}});
///     u.redacted(); // amqp://ops:***@rabbit-1:5672,rabbit-2:5672,[::1]:5674/orders
struct endpoint {
    std::string host = "localhost";
    std::uint16_t port = 5672;

    friend bool operator==(const endpoint&, const endpoint&) = default;

    /// `host:port`, with an IPv6 host in brackets (`[::1]:5672`): how URLs, logs and errors
    /// show it.
    std::string to_string() const {
        const bool ipv6 = host.find(':') != std::string::npos;
        return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
    }
};

} // namespace letterbox::amqp
