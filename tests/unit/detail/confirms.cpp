// SPDX-License-Identifier: BSL-1.0
#include <letterbox/detail/confirms.hpp>

#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <system_error>
#include <vector>

namespace unit_detail_confirms {

namespace {

using letterbox::detail::confirm_outcome;
using letterbox::detail::take_confirmed;

std::map<std::uint64_t, std::string> unconfirmed() {
    return {{1, "a"}, {2, "b"}, {4, "d"}, {5, "e"}};
}

} // namespace

TEST_CASE("a single confirm takes its own publish only", "[detail][confirms]") {
    auto pending = unconfirmed();
    CHECK(take_confirmed(pending, 4, false) == std::vector<std::string>{"d"});
    CHECK(pending == std::map<std::uint64_t, std::string>{{1, "a"}, {2, "b"}, {5, "e"}});
}

TEST_CASE("a multiple confirm takes every publish up to its sequence number, in order",
          "[detail][confirms]") {
    auto pending = unconfirmed();
    CHECK(take_confirmed(pending, 3, true) == std::vector<std::string>{"a", "b"});
    CHECK(pending == std::map<std::uint64_t, std::string>{{4, "d"}, {5, "e"}});
    CHECK(take_confirmed(pending, 5, true) == std::vector<std::string>{"d", "e"});
    CHECK(pending.empty());
}

TEST_CASE("a confirm of no unconfirmed publish takes nothing", "[detail][confirms]") {
    auto pending = unconfirmed();
    CHECK(take_confirmed(pending, 3, false).empty());
    CHECK(take_confirmed(pending, 0, true).empty());
    CHECK(pending == unconfirmed());
}

TEST_CASE("a confirmed publish reports nacked, unroutable or stored", "[detail][confirms]") {
    CHECK(confirm_outcome(false, false) == letterbox::errc::publish_nacked);
    CHECK(confirm_outcome(false, true) == letterbox::errc::publish_nacked);
    CHECK(confirm_outcome(true, true) == letterbox::errc::no_route);
    CHECK_FALSE(confirm_outcome(true, false));
}

} // namespace unit_detail_confirms
