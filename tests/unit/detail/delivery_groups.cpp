// SPDX-License-Identifier: BSL-1.0

#include <letterbox/detail/delivery_groups.hpp>

#include <letterbox/group_key.hpp>
#include <letterbox/headers.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace unit_detail_delivery_groups {

namespace {

using item = letterbox::detail::delivery_groups::item;

item delivery_in(const std::string& group, std::uint64_t tag) {
    auto d = std::make_shared<letterbox::delivery>();
    d->channel = 1;
    d->delivery_tag = tag;
    if (!group.empty())
        d->msg.headers.set(letterbox::headers::group, group);
    return d;
}

letterbox::group_options options(letterbox::missing_group_key missing) {
    return {.key = letterbox::group_key::standard{}, .on_missing_key = missing};
}

} // namespace

TEST_CASE("delivery_groups runs a group's deliveries one at a time, released by their settlement",
          "[detail][groups]") {
    letterbox::detail::delivery_groups g(options(letterbox::missing_group_key::refuse), 8);
    CHECK(g.strict());
    std::vector<item> start;
    const auto a1 = delivery_in("A", 1), a2 = delivery_in("A", 2), b1 = delivery_in("B", 3);
    REQUIRE(g.admit(a1, start));
    REQUIRE(g.admit(a2, start));
    REQUIRE(g.admit(b1, start));
    CHECK(start == std::vector<item>{a1, b1});
    start.clear();
    g.settled(*b1, start);
    CHECK(start.empty());
    g.settled(*a1, start);
    CHECK(start == std::vector<item>{a2});
    start.clear();
    g.settled(*a1, start); // settled twice: nothing more
    CHECK(start.empty());
}

TEST_CASE("delivery_groups refuses a delivery without a group, or makes it a group of its own",
          "[detail][groups]") {
    std::vector<item> start;
    letterbox::detail::delivery_groups refusing(options(letterbox::missing_group_key::refuse), 8);
    CHECK_FALSE(refusing.admit(delivery_in("", 1), start));
    CHECK(start.empty());

    letterbox::detail::delivery_groups alone(options(letterbox::missing_group_key::own_group), 8);
    const auto x = delivery_in("", 1), y = delivery_in("", 2);
    REQUIRE(alone.admit(x, start));
    REQUIRE(alone.admit(y, start));
    CHECK(start == std::vector<item>{x, y}); // neither waits for the other

    auto throwing = options(letterbox::missing_group_key::refuse);
    throwing.key = [](const letterbox::message&) -> std::optional<std::string> {
        throw std::runtime_error("unreadable");
    };
    letterbox::detail::delivery_groups unreadable(throwing, 8);
    CHECK_FALSE(unreadable.admit(delivery_in("A", 3), start));
}

} // namespace unit_detail_delivery_groups
