// SPDX-License-Identifier: BSL-1.0
// Tune negotiation: 0 means "no limit", the ceiling caps everything, a server cannot go below
// the protocol minimum nor raise the client's limit.
#include <letterbox/amqp/codec/negotiate.hpp>

#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <system_error>

namespace unit_amqp_codec_negotiate {

using namespace letterbox::amqp::codec;
using letterbox::errc;

TEST_CASE("frame_max is the smaller proposal, 0 standing for the ceiling",
          "[amqp][codec][negotiate]") {
    std::error_code ec;
    CHECK(negotiate_frame_max(0, 131072, ec) == 131072);
    CHECK(negotiate_frame_max(8192, 131072, ec) == 8192);
    CHECK(negotiate_frame_max(131072, 8192, ec) == 8192); // never raised by the server
    CHECK(negotiate_frame_max(0, 0, ec) == frame_max_ceiling);
    CHECK(negotiate_frame_max(0, 0xFFFFFFFFU, ec) == frame_max_ceiling);
    CHECK(negotiate_frame_max(4096, 4096, ec) == 4096);
    CHECK_FALSE(ec);
}

TEST_CASE("a server frame_max below 4096 is syntax_error, a client one invalid_argument",
          "[amqp][codec][negotiate]") {
    std::error_code ec;
    CHECK(negotiate_frame_max(0, 4095, ec) == 0);
    CHECK(ec == errc::syntax_error);
    CHECK(negotiate_frame_max(0, 1, ec) == 0);
    CHECK(ec == errc::syntax_error);
    CHECK(negotiate_frame_max(100, 131072, ec) == 0);
    CHECK(ec == errc::invalid_argument);
}

TEST_CASE("channel_max is the smaller proposal, 0 standing for 65535", "[amqp][codec][negotiate]") {
    CHECK(negotiate_channel_max(0, 2047) == 2047);
    CHECK(negotiate_channel_max(100, 2047) == 100);
    CHECK(negotiate_channel_max(0, 0) == 65535);
    static_assert(negotiate_channel_max(5, 0) == 5);
}

} // namespace unit_amqp_codec_negotiate
