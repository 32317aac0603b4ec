// SPDX-License-Identifier: BSL-1.0
#pragma once

// The listening address of the ops HTTP server: how `http_server_options::address` is read, and
// how addresses are compared (loopback, IPv4-mapped IPv6).

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/address_v6.hpp>

#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

namespace route {

/// `a` with an IPv4-mapped IPv6 address (a dual-stack socket's view of an IPv4 peer) as IPv4.
inline boost::asio::ip::address unmapped(const boost::asio::ip::address& a) {
    namespace ip = boost::asio::ip;
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        return ip::make_address_v4(ip::v4_mapped, a.to_v6());
    return a;
}

inline bool is_loopback(const boost::asio::ip::address& a) {
    return unmapped(a).is_loopback();
}

/// The address `http_server_options::address` names: an IP address, or localhost.
inline boost::asio::ip::address parse_listen_address(const std::string& text) {
    if (text == "localhost")
        return boost::asio::ip::make_address_v4("127.0.0.1");
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address(text, ec);
    if (!ec)
        return a;
    std::string message = "http_server_options::address '" + text +
                          "' is not an IP address: give an IPv4 or IPv6 address (127.0.0.1, "
                          "::1, 0.0.0.0, ::) or localhost; host names are not resolved";
    if (text.find(':') != std::string::npos)
        message += " (the port goes in http_server_options::port)";
    throw letterbox::error(errc::invalid_argument, message);
}

} // namespace route

} // namespace letterbox::ops::detail
