// SPDX-License-Identifier: BSL-1.0

#include <letterbox/amqp/detail/endpoint_order.hpp>

#include <letterbox/amqp/endpoint.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace unit_amqp_detail_endpoint_order {

namespace {

using letterbox::amqp::endpoint;
using letterbox::amqp::detail::endpoint_order;

std::vector<endpoint> hosts(std::size_t n) {
    std::vector<endpoint> list;
    for (std::size_t i = 0; i < n; ++i)
        list.push_back(endpoint{"h" + std::to_string(i), 5672});
    return list;
}

/// The order as the indices of `hosts(n)`.
std::vector<std::size_t> indices(const std::vector<endpoint>& order) {
    std::vector<std::size_t> out;
    for (const auto& e : order)
        out.push_back(std::stoul(e.host.substr(1)));
    return out;
}

} // namespace

TEST_CASE("endpoint_order: a seed gives the same order on every platform",
          "[amqp][detail][endpoint_order]") {
    // Pinned: splitmix64 and Fisher-Yates of our own, not std::shuffle, so these never change
    // with the standard library. tests/unit/amqp/transport.cpp relies on the first.
    using v = std::vector<std::size_t>;
    CHECK(indices(endpoint_order(hosts(4), true, 20240611)) == v{1, 0, 2, 3});
    CHECK(indices(endpoint_order(hosts(4), true, 0)) == v{2, 1, 0, 3});
    CHECK(indices(endpoint_order(hosts(8), true, 1)) == v{4, 3, 2, 7, 5, 6, 0, 1});
    CHECK(endpoint_order(hosts(5), true, 42) == endpoint_order(hosts(5), true, 42));
}

TEST_CASE("endpoint_order: every order is a permutation, and seeds spread the first endpoint "
          "evenly",
          "[amqp][detail][endpoint_order]") {
    std::map<std::vector<std::size_t>, int> seen;
    std::map<std::size_t, int> first;
    constexpr int seeds = 6000;
    for (std::uint64_t seed = 0; seed < seeds; ++seed) {
        auto order = indices(endpoint_order(hosts(3), true, seed));
        ++first[order.front()];
        auto sorted = order;
        std::sort(sorted.begin(), sorted.end());
        REQUIRE(sorted == std::vector<std::size_t>{0, 1, 2});
        ++seen[order];
    }
    CHECK(seen.size() == 6); // all 3! orders occur
    for (const auto& [index, count] : first) {
        INFO("endpoint " << index << " first " << count << " times of " << seeds);
        CHECK(count > seeds / 3 - 300);
        CHECK(count < seeds / 3 + 300);
    }
}

TEST_CASE("endpoint_order: without shuffling, or with one endpoint, the order is as given",
          "[amqp][detail][endpoint_order]") {
    CHECK(endpoint_order(hosts(6), false, 7) == hosts(6));
    CHECK(endpoint_order(hosts(6), false, std::nullopt) == hosts(6));
    CHECK(endpoint_order(hosts(1), true, std::nullopt) == hosts(1));
    // Unseeded: a permutation still (from std::random_device).
    auto order = indices(endpoint_order(hosts(6), true, std::nullopt));
    std::sort(order.begin(), order.end());
    CHECK(order == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
}

} // namespace unit_amqp_detail_endpoint_order
