// SPDX-License-Identifier: BSL-1.0
#include <letterbox/virtual_clock.hpp>

#include <letterbox/clock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

namespace unit_virtual_clock {

using namespace letterbox;
using namespace std::chrono_literals;

namespace {
// An io_context that ran out of work is stopped; restart it before polling again.
std::size_t poll(boost::asio::io_context& io) {
    io.restart();
    return io.poll();
}
} // namespace

TEST_CASE("virtual time moves only when the clock is advanced", "[clock]") {
    virtual_clock c;
    const auto t0 = c.now();
    CHECK(c.now() == t0);
    c.advance(5s);
    CHECK(c.now() - t0 == 5s);
    CHECK(c.wall_now() == virtual_clock::default_wall_epoch + 5s);
    c.advance_to(t0); // never backwards
    CHECK(c.now() - t0 == 5s);
}

TEST_CASE("virtual timers fire in deadline order, equal deadlines in arrival order", "[clock]") {
    boost::asio::io_context io;
    virtual_clock c;
    std::vector<int> fired;
    auto t1 = c.make_timer(io.get_executor());
    auto t2 = c.make_timer(io.get_executor());
    auto t3 = c.make_timer(io.get_executor());
    t1.expires_after(30ms);
    t2.expires_after(10ms);
    t3.expires_after(30ms);
    t1.async_wait([&](boost::system::error_code ec) { fired.push_back(ec ? -1 : 1); });
    t2.async_wait([&](boost::system::error_code ec) { fired.push_back(ec ? -2 : 2); });
    t3.async_wait([&](boost::system::error_code ec) { fired.push_back(ec ? -3 : 3); });
    poll(io);
    CHECK(fired.empty());
    CHECK(c.pending() == 3);
    c.advance(10ms);
    CHECK(fired.empty()); // handlers are posted, not run inline
    poll(io);
    CHECK(fired == std::vector<int>{2});
    REQUIRE(c.advance_to_next());
    poll(io);
    CHECK(fired == std::vector<int>{2, 1, 3});
    CHECK_FALSE(c.advance_to_next());
    CHECK_FALSE(c.next_deadline().has_value());
}

TEST_CASE("cancelling or re-arming a virtual timer aborts its pending waits", "[clock]") {
    boost::asio::io_context io;
    virtual_clock c;
    std::vector<boost::system::error_code> results;
    auto t = c.make_timer(io.get_executor());
    t.expires_after(1s);
    t.async_wait([&](boost::system::error_code ec) { results.push_back(ec); });
    CHECK(t.expires_after(2s) == 1);
    t.async_wait([&](boost::system::error_code ec) { results.push_back(ec); });
    c.advance(1s);
    poll(io);
    REQUIRE(results.size() == 1);
    CHECK(results[0] == boost::asio::error::operation_aborted);
    {
        auto gone = c.make_timer(io.get_executor());
        gone.expires_after(1s);
        gone.async_wait([&](boost::system::error_code ec) { results.push_back(ec); });
    } // destruction cancels
    c.advance(1s);
    poll(io);
    REQUIRE(results.size() == 3);
    CHECK(results[1] == boost::asio::error::operation_aborted);
    CHECK_FALSE(results[2]);
}

TEST_CASE("a wait on an expiry already passed completes at once and futures work", "[clock]") {
    boost::asio::io_context io;
    virtual_clock c;
    auto t = c.make_timer(io.get_executor());
    t.expires_at(c.now());
    auto f = t.async_wait(boost::asio::use_future);
    poll(io);
    REQUIRE(f.wait_for(5s) ==
            std::future_status::ready); // use_future completes on its own executor
    CHECK_NOTHROW(f.get());
}

TEST_CASE("both shipped clocks model the clock concept", "[clock]") {
    STATIC_REQUIRE(letterbox::clock<virtual_clock>);
    STATIC_REQUIRE(letterbox::clock<steady_clock>);
    STATIC_REQUIRE(letterbox::waitable_timer<virtual_clock::timer_type<>>);
}

TEST_CASE("a clock destroyed with a pending wait whose handler owns its timer frees it once",
          "[clock]") {
    // The pattern of letterbox::consumer's retry delays: the handler keeps its timer alive.
    // Destroying the clock destroys the handler, hence the timer, whose destructor cancels
    // through the clock; ASan reported a use after free here before the clock took its waits
    // out first.
    boost::asio::io_context io;
    bool fired = false;
    std::weak_ptr<letterbox::virtual_clock::timer_type<>> watch;
    {
        letterbox::virtual_clock clock;
        auto timer = std::make_shared<letterbox::virtual_clock::timer_type<>>(
            clock.make_timer(boost::asio::any_io_executor(io.get_executor())));
        watch = timer;
        timer->expires_after(std::chrono::seconds(5));
        timer->async_wait([timer, &fired](boost::system::error_code) { fired = true; });
        timer.reset();
        CHECK(clock.pending() == 1);
        CHECK_FALSE(watch.expired()); // the handler holds it
    }
    CHECK(watch.expired()); // destroyed with the clock, once
    io.run();
    CHECK_FALSE(fired);
}

TEST_CASE("a wait cancelled through its slot ends alone, and keeps no work",
          "[clock][cancellation]") {
    boost::asio::io_context io;
    virtual_clock c;
    auto timer = c.make_timer(io.get_executor());
    timer.expires_after(5s);
    boost::asio::cancellation_signal signal;
    std::vector<boost::system::error_code> cancelled, kept;
    timer.async_wait(boost::asio::bind_cancellation_slot(
        signal.slot(), [&](boost::system::error_code ec) { cancelled.push_back(ec); }));
    timer.async_wait([&](boost::system::error_code ec) { kept.push_back(ec); });
    CHECK(c.pending() == 2);
    poll(io);
    CHECK(io.stopped()); // untracked: the program, not the executor, moves virtual time

    signal.emit(boost::asio::cancellation_type::terminal);
    poll(io);
    REQUIRE(cancelled.size() == 1);
    CHECK(cancelled[0] == boost::asio::error::operation_aborted);
    CHECK(c.pending() == 1); // the other wait is left alone
    CHECK_FALSE(signal.slot().has_handler());

    c.advance(5s);
    poll(io);
    REQUIRE(kept.size() == 1);
    CHECK_FALSE(kept[0]);
    CHECK(cancelled.size() == 1);
}

TEST_CASE("a wait honours terminal, partial and total cancellation, as an Asio timer",
          "[clock][cancellation]") {
    for (auto type :
         {boost::asio::cancellation_type::terminal, boost::asio::cancellation_type::partial,
          boost::asio::cancellation_type::total}) {
        boost::asio::io_context io;
        virtual_clock c;
        auto timer = c.make_timer(io.get_executor());
        timer.expires_after(1s);
        boost::asio::cancellation_signal signal;
        std::vector<boost::system::error_code> got;
        timer.async_wait(boost::asio::bind_cancellation_slot(
            signal.slot(), [&](boost::system::error_code ec) { got.push_back(ec); }));
        signal.emit(type);
        poll(io);
        REQUIRE(got.size() == 1);
        CHECK(got[0] == boost::asio::error::operation_aborted);
        CHECK(c.pending() == 0);
    }
}

} // namespace unit_virtual_clock
