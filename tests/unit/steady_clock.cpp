// SPDX-License-Identifier: BSL-1.0
#include <letterbox/steady_clock.hpp>

#include <letterbox/concepts/clock.hpp>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

namespace unit_steady_clock {

using namespace std::chrono_literals;

TEST_CASE("the steady clock's timers are Asio timers that fire after their expiry", "[clock]") {
    STATIC_REQUIRE(letterbox::clock<letterbox::steady_clock>);
    boost::asio::io_context io;
    letterbox::steady_clock c;
    auto t = c.make_timer(io.get_executor());
    const auto start = c.now();
    t.expires_after(2ms);
    bool fired = false;
    t.async_wait([&](boost::system::error_code ec) { fired = !ec; });
    io.run_for(2s); // bounded: returns as soon as the timer fired
    CHECK(fired);
    CHECK(c.now() - start >= 2ms);
    CHECK(c.wall_now().time_since_epoch().count() > 0);
}

} // namespace unit_steady_clock
