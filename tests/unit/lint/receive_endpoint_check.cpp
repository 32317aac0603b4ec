// SPDX-License-Identifier: BSL-1.0
// The topology check a receive_endpoint runs when it builds a consumer
// (lint::topology_check_options, docs/topology-lint.md "When a pipeline is built").

#include <letterbox/receive_endpoint.hpp>

#include <letterbox/backoff/exponential.hpp>
#include <letterbox/error.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/lint.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace unit_lint_receive_endpoint_check {

namespace {

using namespace std::chrono_literals;
namespace lint = letterbox::lint;
using letterbox::in_memory::broker_profile;

struct world : test_support::simulation {
    explicit world(broker_profile profile)
        : test_support::simulation(letterbox::in_memory::broker_options{.profile = profile}) {}
    letterbox::in_memory::transport transport{broker};
};

void ok(const letterbox::message&) {}

// The options of a quorum endpoint with the check on, collecting what it reports.
letterbox::receive_endpoint_options quorum_orders(std::vector<lint::finding>& reported) {
    return {.queue = "orders",
            .quorum = letterbox::topology::quorum_options{},
            .topology_check = {.check = lint::check_topology,
                               .on_finding = [&reported](const lint::finding& f) {
                                   reported.push_back(f);
                               }}};
}

std::vector<std::string> codes(const std::vector<lint::finding>& findings) {
    std::vector<std::string> out;
    for (const auto& f : findings)
        out.push_back(f.code);
    return out;
}

} // namespace

TEST_CASE("a quorum endpoint on a RabbitMQ 4.0 broker is refused by its topology check: its "
          "dead-letter queue would drop what it holds after 20 returns",
          "[lint][receive_endpoint]") {
    world w(broker_profile::rabbitmq_4_0());
    std::vector<lint::finding> reported;
    const auto e = letterbox::receive_endpoint(w.transport, w.clock, quorum_orders(reported));
    try {
        (void)e.consume(ok);
        FAIL("consume accepted the topology");
    } catch (const letterbox::error& x) {
        CHECK(x.code() == letterbox::errc::invalid_argument);
        const std::string what = x.what();
        CHECK(what.find("receive_endpoint 'orders': the topology check refuses it") !=
              std::string::npos);
        CHECK(what.find("LB-QQ-DELIVERY-LIMIT-DEFAULT") != std::string::npos);
        CHECK(what.find("orders.dlq") != std::string::npos);
    }
}

TEST_CASE("the topology check of an endpoint takes the broker's policies it is given: a "
          "delivery-limit -1 policy on the dead-letter queues lets the quorum endpoint start on "
          "4.0",
          "[lint][receive_endpoint]") {
    world w(broker_profile::rabbitmq_4_0());
    std::vector<lint::finding> reported;
    auto options = quorum_orders(reported);
    lint::policy unlimited;
    unlimited.name = "dead-letter-queues";
    unlimited.pattern = "\\.dlq$";
    unlimited.apply_to = "quorum_queues";
    unlimited.definition.set("delivery-limit", std::int64_t{-1});
    options.topology_check.policies = {unlimited};
    const auto e = letterbox::receive_endpoint(w.transport, w.clock, options);
    CHECK_NOTHROW((void)e.consume(ok));
    for (const auto& f : reported)
        CHECK(f.level != lint::severity::error);
}

TEST_CASE("the same quorum endpoint passes its topology check on RabbitMQ 3.10, which has no "
          "default delivery limit",
          "[lint][receive_endpoint]") {
    world w(broker_profile::rabbitmq_3_10());
    std::vector<lint::finding> reported;
    const auto e = letterbox::receive_endpoint(w.transport, w.clock, quorum_orders(reported));
    CHECK_NOTHROW((void)e.consume(ok));
    CHECK(codes(reported).empty());
}

TEST_CASE("without a check, an endpoint builds its consumer whatever the broker's version",
          "[lint][receive_endpoint]") {
    world w(broker_profile::rabbitmq_4_0());
    const auto e = letterbox::receive_endpoint(
        w.transport, w.clock, {.queue = "orders", .quorum = letterbox::topology::quorum_options{}});
    CHECK_NOTHROW((void)e.consume(ok));
}

TEST_CASE("an endpoint's topology check sees its inbox's retention and its redelivery horizon",
          "[lint][receive_endpoint]") {
    world w(broker_profile::rabbitmq_3_10());
    std::vector<lint::finding> reported;
    lint::finding seen;
    const auto e =
        letterbox::receive_endpoint(
            w.transport, w.clock,
            {.queue = "orders",
             .topology_check = {.check =
                                    [&seen](const lint::broker_topology& t, const broker_profile& p,
                                            std::span<const lint::consumer_settings> c) {
                                        REQUIRE(c.size() == 1);
                                        seen.objects = {c[0].queue};
                                        CHECK(c[0].inbox_retention ==
                                              std::optional<std::chrono::milliseconds>(
                                                  std::chrono::hours{24}));
                                        CHECK(c[0].redelivery_horizon >= 30s);
                                        CHECK(c[0].retry_queues.size() == 2);
                                        return lint::check_topology(t, p, c);
                                    }}})
            .redelivery(letterbox::backoff::exponential(10s, 2.0, 20s, 3));
    letterbox::in_memory_inbox_store inbox;
    CHECK_NOTHROW(
        (void)e.consume(letterbox::middleware::idempotent(
                            [](const letterbox::message&, letterbox::in_memory_unit_of_work&) {},
                            inbox, "orders", w.clock)
                            .with_retention(std::chrono::hours{24})));
    CHECK(seen.objects == std::vector<std::string>{"orders"});
}

TEST_CASE("when the broker's version is unknown, only an error on every profile refuses, and an "
          "error on some of them is reported",
          "[lint][receive_endpoint]") {
    std::vector<lint::finding> reported;
    lint::topology_check_options options{.check = lint::check_topology,
                                         .on_finding = [&](const lint::finding& f) {
                                             reported.push_back(f);
                                         }};
    const auto topo = letterbox::topology::retry_topology{
        .queue = "orders", .quorum = letterbox::topology::quorum_options{}};
    lint::broker_topology t;
    t.queues = topo.queues();
    lint::consumer_settings c;
    c.queue = "orders";
    const auto all = broker_profile::known();
    CHECK_NOTHROW(lint::detail::apply_topology_check(options, t, c, all, "endpoint"));
    // An error on 4.0 (its dead-letter queue's scans count), a warning on 4.3: both reported.
    CHECK(codes(reported) ==
          std::vector<std::string>{"LB-QQ-DELIVERY-LIMIT-DEFAULT", "LB-QQ-DELIVERY-LIMIT-DEFAULT"});
    REQUIRE(reported.size() == 2);
    CHECK(reported[0].level == lint::severity::error);
    CHECK(reported[1].level == lint::severity::warning);

    // A topology that is wrong on every version is refused.
    lint::broker_topology lost = t;
    letterbox::topology::queue q;
    q.name = "lost";
    q.arguments.set("x-dead-letter-exchange", std::string("nowhere"));
    lost.queues.push_back(q);
    CHECK_THROWS_WITH(lint::detail::apply_topology_check(options, lost, c, all, "endpoint"),
                      Catch::Contains("LB-DLX-MISSING"));
}

} // namespace unit_lint_receive_endpoint_check
