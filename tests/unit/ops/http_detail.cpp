// SPDX-License-Identifier: BSL-1.0
// The private helpers of http_server: the constant-time token comparison and the request
// target parser.

#include <letterbox/ops/detail/constant_time_equal.hpp>

#include <letterbox/ops/detail/query_string.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace unit_ops_http_detail {

using letterbox::ops::detail::constant_time_equal;
using letterbox::ops::detail::parse_target;
using letterbox::ops::detail::percent_decode;

TEST_CASE("constant_time_equal: equal only for the same bytes and the same length",
          "[ops][detail]") {
    CHECK(constant_time_equal("s3cret", "s3cret"));
    CHECK_FALSE(constant_time_equal("s3creT", "s3cret"));
    CHECK_FALSE(constant_time_equal("x3cret", "s3cret"));
    CHECK_FALSE(constant_time_equal("s3cre", "s3cret"));
    CHECK_FALSE(constant_time_equal("s3crett", "s3cret"));
    CHECK_FALSE(constant_time_equal("", "s3cret"));
    // A prefix padded with NULs must not match: the length counts.
    CHECK_FALSE(constant_time_equal(std::string("s3cret\0", 7), "s3cret"));
    CHECK_FALSE(constant_time_equal(std::string("s3c\0\0\0", 6), std::string("s3c", 3)));
    CHECK(constant_time_equal("", ""));
}

TEST_CASE("parse_target: decoded segments and query parameters", "[ops][detail]") {
    const auto t =
        parse_target("/dlq/orders%2Fdlq//replay/?a=1&header.x-tenant=acme+corp&id=x&id=y&flag&&");
    REQUIRE(t.has_value());
    CHECK(t->segments == std::vector<std::string>{"dlq", "orders/dlq", "replay"});
    const std::vector<std::pair<std::string, std::string>> params{
        {"a", "1"}, {"header.x-tenant", "acme corp"}, {"id", "x"}, {"id", "y"}, {"flag", ""}};
    CHECK(t->params == params);

    const auto root = parse_target("/");
    REQUIRE(root.has_value());
    CHECK(root->segments.empty());
    CHECK(root->params.empty());

    CHECK_FALSE(parse_target("").has_value());
    CHECK_FALSE(parse_target("http://example.com/").has_value());
    CHECK_FALSE(parse_target("/a%2").has_value());
    CHECK_FALSE(parse_target("/a?x=%G1").has_value());
    CHECK(percent_decode("a%20b+c", false) == "a b+c");
    CHECK(percent_decode("a%20b+c", true) == "a b c");
    CHECK_FALSE(percent_decode("%", true).has_value());
}

} // namespace unit_ops_http_detail
