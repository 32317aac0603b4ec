// SPDX-License-Identifier: BSL-1.0

#include <letterbox/topology/retry_topology.hpp>

#include <letterbox/topology/queue_arguments.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <system_error>

namespace unit_topology_retry_topology {

namespace {

using namespace std::chrono_literals;

letterbox::topology::retry_topology billing_topology() {
    return {.queue = "billing", .delays = {1s, 10s, 60s}};
}

} // namespace

TEST_CASE("retry_topology declares retry queues that dead-letter back, and the DLQ",
          "[middleware][topology]") {
    auto topo = billing_topology();
    topo.rejects = letterbox::topology::rejects_go_to::dead_letter_queue;
    const auto qs = topo.queues();
    REQUIRE(qs.size() == 5);
    CHECK(qs[0].name == "billing.retry.1000ms");
    std::error_code ec;
    std::string why;
    auto args = letterbox::topology::queue_arguments::parse(qs[0].arguments, ec, why);
    REQUIRE(args);
    CHECK(args->message_ttl == 1s);
    CHECK(args->dead_letter_exchange == "");
    CHECK(args->dead_letter_routing_key == "billing");
    CHECK(qs[3].name == "billing.dlq");
    CHECK(qs[4].name == "billing");
    auto work = letterbox::topology::queue_arguments::parse(qs[4].arguments, ec, why);
    REQUIRE(work);
    CHECK(work->dead_letter_routing_key == "billing.dlq");
    CHECK(topo.level_for(5s) == 10s);
    CHECK(topo.level_for(2h) == 60s);
}

} // namespace unit_topology_retry_topology
