// SPDX-License-Identifier: BSL-1.0

#include <letterbox/ops/topology_lint_check.hpp>

#include <letterbox/lint.hpp>
#include <letterbox/topology/retry_topology.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace unit_ops_topology_lint_check {

namespace {

namespace lint = letterbox::lint;
using letterbox::in_memory::broker_profile;

/// A consumer that counts attempts from x-death, on a work queue that rejects onto a retry
/// queue: fine on 3.10, a warning where a client's x-death is ignored (LB-XDEATH-CLIENT).
std::vector<lint::finding> lint_for(const broker_profile& profile) {
    const letterbox::topology::retry_topology topo{
        .queue = "orders",
        .delays = {std::chrono::seconds{5}},
        .rejects = letterbox::topology::rejects_go_to::retry_queue};
    lint::broker_topology t;
    t.queues = topo.queues();
    lint::consumer_settings c;
    c.queue = "orders";
    c.failures = lint::failure_handling::reject;
    c.attempts_from_x_death = true;
    c.retry_queues = {topo.retry_queue_name(std::chrono::seconds{5})};
    return lint::check_topology(t, profile, {&c, 1});
}

} // namespace

TEST_CASE("topology_lint_check is ready on a version the pipeline suits, and names the warning "
          "on one whose x-death handling it relies on",
          "[ops][lint]") {
    broker_profile profile = broker_profile::rabbitmq_3_10();
    const auto check = letterbox::ops::topology_lint_check([&] { return lint_for(profile); });
    auto r = check();
    CHECK(r.ok);
    CHECK(r.detail == "no findings");

    profile = broker_profile::rabbitmq_4_0(); // a failover to a 4.0 node, say
    r = check();
    CHECK(r.ok);
    CHECK(r.detail == "0 errors, 1 warning: LB-XDEATH-CLIENT (consumer of 'orders')");
}

TEST_CASE("topology_lint_check fails on an error finding and on a check that throws",
          "[ops][lint]") {
    const auto failing = letterbox::ops::topology_lint_check([] {
        lint::broker_topology t;
        letterbox::topology::queue q;
        q.name = "orders";
        q.arguments.set("x-dead-letter-exchange", std::string("orders.dlx"));
        t.queues = {q};
        return lint::check_topology(t, broker_profile::rabbitmq_3_10());
    });
    const auto r = failing();
    CHECK_FALSE(r.ok);
    CHECK(r.detail ==
          "1 error, 0 warnings: LB-DLX-MISSING (queue 'orders', exchange 'orders.dlx')");

    const auto throwing = letterbox::ops::topology_lint_check(
        []() -> std::vector<lint::finding> { throw std::runtime_error("no topology yet"); });
    const auto t = throwing();
    CHECK_FALSE(t.ok);
    CHECK(t.detail == "the topology check failed: no topology yet");
}

} // namespace unit_ops_topology_lint_check
