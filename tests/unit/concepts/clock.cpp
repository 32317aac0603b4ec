// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of clock (and of the waitable_timer its make_timer returns) is
// necessary. Every type below has all the parts of a model but one, and the concept must reject
// it.

#include <letterbox/concepts/clock.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>

namespace unit_concepts_clock {

namespace {

using executor = boost::asio::any_io_executor;
using duration = std::chrono::nanoseconds;
struct epoch_clock {};
using time_point = std::chrono::time_point<epoch_clock, duration>;

// Timer parts.
struct timer_types {
    using duration = unit_concepts_clock::duration;
    using time_point = unit_concepts_clock::time_point;
};
struct timer_duration_only {
    using duration = unit_concepts_clock::duration;
};
struct timer_time_point_only {
    using time_point = unit_concepts_clock::time_point;
};
struct with_expires_at {
    void expires_at(time_point) {}
};
struct with_expires_after {
    void expires_after(duration) {}
};
struct cancels {
    void cancel() {}
};
struct waits {
    template <class Token>
    void async_wait(Token&&) {}
};

template <class... Parts>
struct timer_of : Parts... {};

using timer = timer_of<timer_types, with_expires_at, with_expires_after, cancels, waits>;

// Clock parts.
struct has_duration {
    using duration = unit_concepts_clock::duration;
};
struct has_time_point {
    using time_point = unit_concepts_clock::time_point;
};
struct with_now {
    time_point now() const { return {}; }
};
struct now_mutable {
    time_point now() { return {}; }
};
struct now_of_another_clock {
    std::chrono::steady_clock::time_point now() const { return {}; }
};
struct with_wall_now {
    std::chrono::system_clock::time_point wall_now() const { return {}; }
};
struct wall_now_as_number {
    long wall_now() const { return 0; }
};
template <class Timer>
struct makes {
    Timer make_timer(const executor&) { return {}; }
};
struct makes_a_number {
    int make_timer(const executor&) { return 0; }
};

template <class... Parts>
struct clock_of : Parts... {};

template <class Timer>
using clock_with_timer =
    clock_of<has_duration, has_time_point, with_now, with_wall_now, makes<Timer>>;

} // namespace

TEST_CASE("a type with every clock member and a waitable timer is a clock", "[concepts][clock]") {
    STATIC_REQUIRE(letterbox::waitable_timer<timer>);
    STATIC_REQUIRE(letterbox::clock<clock_with_timer<timer>>);
}

TEST_CASE("a type without duration is not a clock", "[concepts][clock]") {
    STATIC_REQUIRE(
        !letterbox::clock<clock_of<has_time_point, with_now, with_wall_now, makes<timer>>>);
}

TEST_CASE("a type without time_point is not a clock", "[concepts][clock]") {
    STATIC_REQUIRE(
        !letterbox::clock<clock_of<has_duration, with_now, with_wall_now, makes<timer>>>);
}

TEST_CASE("a type without now is not a clock", "[concepts][clock]") {
    STATIC_REQUIRE(
        !letterbox::clock<clock_of<has_duration, has_time_point, with_wall_now, makes<timer>>>);
}

TEST_CASE("a type whose now is not const is not a clock", "[concepts][clock]") {
    STATIC_REQUIRE(
        !letterbox::clock<
            clock_of<has_duration, has_time_point, now_mutable, with_wall_now, makes<timer>>>);
}

TEST_CASE("a type whose now returns another clock's time_point is not a clock",
          "[concepts][clock]") {
    STATIC_REQUIRE(!letterbox::clock<clock_of<has_duration, has_time_point, now_of_another_clock,
                                              with_wall_now, makes<timer>>>);
}

TEST_CASE("a type without wall_now is not a clock", "[concepts][clock]") {
    STATIC_REQUIRE(
        !letterbox::clock<clock_of<has_duration, has_time_point, with_now, makes<timer>>>);
}

TEST_CASE("a type whose wall_now is not a system_clock time is not a clock", "[concepts][clock]") {
    STATIC_REQUIRE(
        !letterbox::clock<
            clock_of<has_duration, has_time_point, with_now, wall_now_as_number, makes<timer>>>);
}

TEST_CASE("a type without make_timer is not a clock", "[concepts][clock]") {
    STATIC_REQUIRE(
        !letterbox::clock<clock_of<has_duration, has_time_point, with_now, with_wall_now>>);
}

TEST_CASE("a type whose make_timer returns no timer is not a clock", "[concepts][clock]") {
    STATIC_REQUIRE(
        !letterbox::clock<
            clock_of<has_duration, has_time_point, with_now, with_wall_now, makes_a_number>>);
}

TEST_CASE("a clock whose timer has no async_wait is not a clock", "[concepts][clock]") {
    using t = timer_of<timer_types, with_expires_at, with_expires_after, cancels>;
    STATIC_REQUIRE(!letterbox::waitable_timer<t>);
    STATIC_REQUIRE(!letterbox::clock<clock_with_timer<t>>);
}

TEST_CASE("a clock whose timer has no cancel is not a clock", "[concepts][clock]") {
    using t = timer_of<timer_types, with_expires_at, with_expires_after, waits>;
    STATIC_REQUIRE(!letterbox::waitable_timer<t>);
    STATIC_REQUIRE(!letterbox::clock<clock_with_timer<t>>);
}

TEST_CASE("a clock whose timer has no expires_at is not a clock", "[concepts][clock]") {
    using t = timer_of<timer_types, with_expires_after, cancels, waits>;
    STATIC_REQUIRE(!letterbox::waitable_timer<t>);
    STATIC_REQUIRE(!letterbox::clock<clock_with_timer<t>>);
}

TEST_CASE("a clock whose timer has no expires_after is not a clock", "[concepts][clock]") {
    using t = timer_of<timer_types, with_expires_at, cancels, waits>;
    STATIC_REQUIRE(!letterbox::waitable_timer<t>);
    STATIC_REQUIRE(!letterbox::clock<clock_with_timer<t>>);
}

TEST_CASE("a clock whose timer has no time_point is not a clock", "[concepts][clock]") {
    using t = timer_of<timer_duration_only, with_expires_at, with_expires_after, cancels, waits>;
    STATIC_REQUIRE(!letterbox::waitable_timer<t>);
    STATIC_REQUIRE(!letterbox::clock<clock_with_timer<t>>);
}

TEST_CASE("a clock whose timer has no duration is not a clock", "[concepts][clock]") {
    using t = timer_of<timer_time_point_only, with_expires_at, with_expires_after, cancels, waits>;
    STATIC_REQUIRE(!letterbox::waitable_timer<t>);
    STATIC_REQUIRE(!letterbox::clock<clock_with_timer<t>>);
}

} // namespace unit_concepts_clock
