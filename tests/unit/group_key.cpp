// SPDX-License-Identifier: BSL-1.0

#include <letterbox/group_key.hpp>

#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace unit_group_key {

namespace headers = letterbox::headers;
namespace group_key = letterbox::group_key;

TEST_CASE("group_key::standard reads x-letterbox-group", "[group_key]") {
    letterbox::message m;
    CHECK_FALSE(group_key::standard{}(m));
    m.headers.set(headers::aggregate_id, "order-7"); // not a group by itself
    CHECK_FALSE(group_key::standard{}(m));
    m.headers.set(headers::group, "account/7");
    CHECK(group_key::standard{}(m) == "account/7");
    m.headers.set(headers::group, std::int64_t{42});
    CHECK(group_key::standard{}(m) == "42");
    m.headers.set(headers::group, ""); // an empty group names none
    CHECK_FALSE(group_key::standard{}(m));
}

TEST_CASE("group_key::by_header takes text, bytes and integers, and refuses the rest",
          "[group_key]") {
    const group_key::by_header key("x-customer");
    CHECK(key.name() == "x-customer");
    letterbox::message m;
    CHECK(key(m) == std::nullopt);
    m.headers.set("x-customer", "A");
    CHECK(key(m) == "A");
    m.headers.set("x-customer",
                  letterbox::byte_array{std::byte{'B'}, std::byte{0}, std::byte{'C'}});
    CHECK(key(m) == std::string("B\0C", 3));
    m.headers.set("x-customer", true);
    CHECK(key(m) == std::nullopt);
    m.headers.set("x-customer", 1.5);
    CHECK(key(m) == std::nullopt);
    m.headers.set("x-customer", std::string());
    CHECK(key(m) == std::nullopt);
}

} // namespace unit_group_key
