// SPDX-License-Identifier: BSL-1.0

#include <letterbox/amqp/endpoint.hpp>

#include <catch2/catch.hpp>

namespace unit_amqp_endpoint {

using letterbox::amqp::endpoint;

TEST_CASE("amqp endpoint: to_string writes host:port, an IPv6 host in brackets",
          "[amqp][endpoint]") {
    CHECK(endpoint{}.to_string() == "localhost:5672");
    CHECK(endpoint{"rabbit-1.example", 5673}.to_string() == "rabbit-1.example:5673");
    CHECK(endpoint{"10.0.0.7", 5671}.to_string() == "10.0.0.7:5671");
    CHECK(endpoint{"::1", 5674}.to_string() == "[::1]:5674");
    CHECK(endpoint{"fe80::1", 1}.to_string() == "[fe80::1]:1");
}

TEST_CASE("amqp endpoint: equal when host and port are", "[amqp][endpoint]") {
    CHECK(endpoint{"h", 1} == endpoint{"h", 1});
    CHECK_FALSE(endpoint{"h", 1} == endpoint{"h", 2});
    CHECK_FALSE(endpoint{"h", 1} == endpoint{"g", 1});
}

} // namespace unit_amqp_endpoint
