// SPDX-License-Identifier: BSL-1.0

#include <letterbox/backoff/jitter.hpp>

#include <letterbox/backoff/detail/hash.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>

namespace unit_backoff_jitter {

namespace {

namespace backoff = letterbox::backoff;
using backoff::jitter;
using backoff::jitter_kind;
using std::chrono::milliseconds;

} // namespace

TEST_CASE("the jitter hash is FNV-1a and splitmix64, pinned to known values", "[retry][jitter]") {
    // Published test vectors: FNV-1a 64 of "" and "a"; the first splitmix64 output from state 0.
    STATIC_REQUIRE(backoff::detail::fnv1a64("") == 0xcbf29ce484222325U);
    STATIC_REQUIRE(backoff::detail::fnv1a64("a") == 0xaf63dc4c8601ec8cU);
    STATIC_REQUIRE(backoff::detail::splitmix64(0) == 0xe220a8397b1dcdafU);
}

TEST_CASE("jitter gives the same delays on every platform", "[retry][jitter]") {
    // Computed independently (in Python, from the formula in jitter.hpp). If these change, every
    // deployed schedule changes: that needs a release note, not a test update.
    STATIC_REQUIRE(backoff::apply(jitter::full(42), milliseconds{1000}, "order-17", 1) ==
                   milliseconds{838});
    STATIC_REQUIRE(backoff::apply(jitter::full(42), milliseconds{1000}, "order-17", 2) ==
                   milliseconds{600});
    STATIC_REQUIRE(backoff::apply(jitter::full(42), milliseconds{1000}, "order-17", 3) ==
                   milliseconds{734});
    STATIC_REQUIRE(backoff::apply(jitter::equal(42), milliseconds{1000}, "order-17", 1) ==
                   milliseconds{887});
    STATIC_REQUIRE(backoff::apply(jitter::equal(42), milliseconds{1000}, "order-17", 2) ==
                   milliseconds{935});
    STATIC_REQUIRE(backoff::apply(jitter::full(0), milliseconds{1'000'000'000}, "", 1) ==
                   milliseconds{76'264'920});
    STATIC_REQUIRE(backoff::apply(jitter::equal(7), milliseconds{999}, "a", 5) ==
                   milliseconds{538});
}

TEST_CASE("no jitter leaves the delay as it is", "[retry][jitter]") {
    STATIC_REQUIRE(jitter{} == jitter{jitter_kind::none, 0});
    CHECK(backoff::apply(jitter{}, milliseconds{1234}, "m", 1) == milliseconds{1234});
    CHECK(backoff::apply(jitter{jitter_kind::none, 99}, milliseconds{5}, "m", 7) ==
          milliseconds{5});
}

TEST_CASE("full jitter stays in [0, base] and equal jitter in [ceil(base / 2), base]",
          "[retry][jitter]") {
    for (const std::int64_t base : {1, 2, 3, 10, 999, 1000, 60'000}) {
        std::set<std::int64_t> full_seen;
        for (std::uint32_t attempt = 1; attempt <= 200; ++attempt) {
            const std::string id = "message-" + std::to_string(attempt % 7);
            const auto full = backoff::apply(jitter::full(3), milliseconds{base}, id, attempt);
            const auto equal = backoff::apply(jitter::equal(3), milliseconds{base}, id, attempt);
            CAPTURE(base, attempt, full.count(), equal.count());
            REQUIRE(full.count() >= 0);
            REQUIRE(full.count() <= base);
            REQUIRE(equal.count() * 2 >= base);
            REQUIRE(equal.count() <= base);
            full_seen.insert(full.count());
        }
        // Both ends are reachable for small delays.
        if (base <= 3) {
            CHECK(full_seen.count(0) == 1);
            CHECK(full_seen.count(base) == 1);
        }
    }
    // Base 1 under equal jitter is always 1 (half of it, rounded up).
    CHECK(backoff::apply(jitter::equal(9), milliseconds{1}, "m", 1) == milliseconds{1});
}

TEST_CASE("jitter never overflows, even for the longest delay", "[retry][jitter]") {
    const auto top = milliseconds::max();
    for (std::uint32_t attempt = 1; attempt < 50; ++attempt) {
        const auto full = backoff::apply(jitter::full(attempt), top, "m", attempt);
        const auto equal = backoff::apply(jitter::equal(attempt), top, "m", attempt);
        REQUIRE(full.count() >= 0);
        REQUIRE(full <= top);
        REQUIRE(equal >= top / 2);
        REQUIRE(equal <= top);
    }
}

TEST_CASE("a zero or negative base is returned unchanged", "[retry][jitter]") {
    CHECK(backoff::apply(jitter::full(1), milliseconds{0}, "m", 1) == milliseconds{0});
    CHECK(backoff::apply(jitter::equal(1), milliseconds{-5}, "m", 1) == milliseconds{-5});
}

TEST_CASE("jitter depends on the seed, the message id and the attempt, and nothing else",
          "[retry][jitter]") {
    const milliseconds base{1'000'000};
    const auto d = backoff::apply(jitter::full(5), base, "order-1", 3);
    CHECK(backoff::apply(jitter::full(5), base, "order-1", 3) == d); // a pure function
    // Each input moves it (base is large, so a collision would be a one-in-a-million fluke).
    CHECK(backoff::apply(jitter::full(6), base, "order-1", 3) != d);
    CHECK(backoff::apply(jitter::full(5), base, "order-2", 3) != d);
    CHECK(backoff::apply(jitter::full(5), base, "order-1", 4) != d);

    // Different messages spread over the range instead of retrying in lockstep.
    std::set<std::int64_t> delays;
    std::int64_t sum = 0;
    constexpr int messages = 1000;
    for (int i = 0; i < messages; ++i) {
        const auto x = backoff::apply(jitter::full(5), milliseconds{1000}, std::to_string(i), 1);
        delays.insert(x.count());
        sum += x.count();
    }
    CHECK(delays.size() > 500);
    CHECK(sum / messages > 450); // uniform in [0, 1000]: a mean near 500
    CHECK(sum / messages < 550);
}

} // namespace unit_backoff_jitter
