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
    std::optional<item> start;
    const auto a1 = delivery_in("A", 1), a2 = delivery_in("A", 2), b1 = delivery_in("B", 3);
    REQUIRE(g.admit(a1, start));
    CHECK(start == a1);
    REQUIRE(g.admit(a2, start));
    CHECK(start == std::nullopt); // behind a1
    REQUIRE(g.admit(b1, start));
    CHECK(start == b1);
    CHECK(g.settled(*b1) == std::nullopt);
    CHECK(g.settled(*a1) == a2);
    CHECK(g.settled(*a1) == std::nullopt); // settled twice: nothing more
}

TEST_CASE("delivery_groups refuses a delivery without a group, or makes it a group of its own",
          "[detail][groups]") {
    std::optional<item> start;
    letterbox::detail::delivery_groups refusing(options(letterbox::missing_group_key::refuse), 8);
    CHECK_FALSE(refusing.admit(delivery_in("", 1), start));
    CHECK(start == std::nullopt);

    letterbox::detail::delivery_groups alone(options(letterbox::missing_group_key::own_group), 8);
    const auto x = delivery_in("", 1), y = delivery_in("", 2);
    REQUIRE(alone.admit(x, start));
    CHECK(start == x);
    REQUIRE(alone.admit(y, start));
    CHECK(start == y); // neither waits for the other

    auto throwing = options(letterbox::missing_group_key::refuse);
    throwing.key = [](const letterbox::message&) -> std::optional<std::string> {
        throw std::runtime_error("unreadable");
    };
    letterbox::detail::delivery_groups unreadable(throwing, 8);
    CHECK_FALSE(unreadable.admit(delivery_in("A", 3), start));
}

} // namespace unit_detail_delivery_groups
