// SPDX-License-Identifier: BSL-1.0
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <set>
#include <type_traits>
#include <vector>

namespace unit_message {

using namespace letterbox;

TEST_CASE("a default-constructed message has the nil id until one is assigned", "[message]") {
    message m;
    CHECK(m.id.is_nil());
    message_id_generator ids(7);
    m.id = ids();
    CHECK_FALSE(m.id.is_nil());
}

TEST_CASE("a seeded message id generator gives the same ids for the same seed", "[message]") {
    message_id_generator a(42), b(42), c(43);
    std::vector<message_id> xs, ys, zs;
    for (int i = 0; i < 16; ++i) {
        xs.push_back(a());
        ys.push_back(b());
        zs.push_back(c());
    }
    CHECK(xs == ys);
    CHECK(xs != zs);
    CHECK(std::set<message_id>(xs.begin(), xs.end()).size() == xs.size());
}

TEST_CASE("a seed's ids stay the same across versions, and every id is an RFC 4122 version 4 "
          "UUID",
          "[message]") {
    // Recorded from boost::uuids::basic_random_generator<std::mt19937_64>, which letterbox
    // used before it drew the bytes itself: a saved seed replays the same ids.
    message_id_generator seven(7);
    CHECK(letterbox::to_string(seven()) == "a7d966eb-3165-4fc1-a2c1-347a546705f3");
    CHECK(letterbox::to_string(seven()) == "ce676920-c1dc-4e1e-b67c-ffd9046c54e4");
    message_id_generator ids(99);
    for (int i = 0; i < 1000; ++i) {
        const message_id id = ids();
        REQUIRE(id.version() == boost::uuids::uuid::version_random_number_based);
        REQUIRE(id.variant() == boost::uuids::uuid::variant_rfc_4122);
    }
}

// The Unix milliseconds in the first 48 bits of a version 7 id.
std::int64_t unix_millis(const message_id& id) {
    std::int64_t ms = 0;
    for (std::size_t i = 0; i < 6; ++i)
        ms = ms << 8 | id.data[i];
    return ms;
}

// The milliseconds and the counter of a version 7 id, as one 60-bit number.
std::uint64_t time_and_counter(const message_id& id) {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < 8; ++i)
        n = n << 8 | id.data[i];
    return (n >> 16) << 12 | (n & 0xFFF);
}

// The version nibble (Boost 1.81 names versions 1 to 5 only).
int version_of(const message_id& id) {
    return id.data[6] >> 4;
}

// A clock set by hand, in steps of `Duration`.
template <class Duration>
struct hand_set_clock {
    std::chrono::sys_time<Duration> now{};
    std::chrono::sys_time<Duration> wall_now() const { return now; }
};
using fine_clock = hand_set_clock<std::chrono::system_clock::duration>;
using millisecond_clock = hand_set_clock<std::chrono::milliseconds>;

// The generator keeps a pointer to its clock: a temporary one is refused at compile time.
static_assert(std::is_constructible_v<message_id_generator, std::uint64_t, fine_clock&>);
static_assert(!std::is_constructible_v<message_id_generator, std::uint64_t, fine_clock>);
static_assert(std::is_constructible_v<message_id_generator, std::uint64_t, millisecond_clock&>);

TEST_CASE("a default message id generator gives RFC 9562 version 7 ids that keep growing, "
          "stamped with the time",
          "[message]") {
    const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    message_id_generator ids;
    std::vector<message_id> xs;
    for (int i = 0; i < 10000; ++i)
        xs.push_back(ids());
    const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    for (std::size_t i = 0; i < xs.size(); ++i) {
        REQUIRE(version_of(xs[i]) == 7);
        REQUIRE(xs[i].variant() == boost::uuids::uuid::variant_rfc_4122);
        REQUIRE(unix_millis(xs[i]) >= before.count());
        // 10,000 ids may borrow up to three milliseconds ahead (4,096 a millisecond at least).
        REQUIRE(unix_millis(xs[i]) <= after.count() + 3);
        if (i > 0) {
            REQUIRE(xs[i - 1] < xs[i]);
            REQUIRE(letterbox::to_string(xs[i - 1]) < letterbox::to_string(xs[i]));
        }
    }
    message_id_generator others;
    CHECK(others() != ids());
}

TEST_CASE("a seed and a clock give reproducible time-ordered ids, growing while the clock "
          "stands still or steps back",
          "[message]") {
    using namespace std::chrono_literals;
    fine_clock clock{.now = std::chrono::system_clock::time_point{1'700'000'000'000ms}};
    message_id_generator a(5, clock), b(5, clock);
    const message_id first = a();
    CHECK(first == b());
    CHECK(version_of(first) == 7);
    CHECK(unix_millis(first) == 1'700'000'000'000);

    // 5,000 ids in one millisecond count up by one: the 12-bit counter fills up and carries
    // into the time.
    message_id last = first;
    for (int i = 0; i < 5000; ++i) {
        const message_id id = a();
        REQUIRE(time_and_counter(id) == time_and_counter(last) + 1);
        REQUIRE(last < id);
        REQUIRE(id == b());
        last = id;
    }
    CHECK(unix_millis(last) > 1'700'000'000'000);
    CHECK(unix_millis(last) <= 1'700'000'000'002);

    clock.now -= 1h; // a clock set back: the ids still grow
    const message_id after_step_back = a();
    CHECK(time_and_counter(after_step_back) == time_and_counter(last) + 1);
    CHECK(last < after_step_back);
    CHECK(unix_millis(after_step_back) == unix_millis(last));

    clock.now += 2h; // later: the id takes the new time
    CHECK(unix_millis(a()) == 1'700'003'600'000);

    // Any sys_time will do.
    const millisecond_clock coarse{.now = std::chrono::sys_time<std::chrono::milliseconds>{42ms}};
    message_id_generator c(5, coarse);
    CHECK(unix_millis(c()) == 42);
}

TEST_CASE("copying a message keeps its id: an id is born once", "[message]") {
    message_id_generator ids(1);
    message m;
    m.id = ids();
    m.body = std::string("a\0b", 3);
    message copy = m;
    CHECK(copy.id == m.id);
    CHECK(copy == m);
    CHECK(copy.body.size() == 3);
}

TEST_CASE("a message id round-trips through its text form and bad text is refused", "[message]") {
    message_id_generator ids(9);
    const auto id = ids();
    const auto text = letterbox::to_string(id);
    CHECK(text.size() == 36);
    CHECK(parse_message_id(text) == id);
    CHECK_FALSE(parse_message_id("not-a-uuid").has_value());
    CHECK_FALSE(parse_message_id(std::string(36, 'z')).has_value());
    CHECK_FALSE(parse_message_id("").has_value());
}

TEST_CASE("message properties default to persistent delivery and compare by value", "[message]") {
    message_properties p;
    CHECK(p.persistent);
    message_properties q = p;
    q.expiration = "100";
    CHECK_FALSE(p == q);
}

} // namespace unit_message
