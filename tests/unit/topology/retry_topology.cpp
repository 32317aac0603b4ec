// SPDX-License-Identifier: BSL-1.0

#include <letterbox/topology/retry_topology.hpp>

#include <letterbox/error.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/quorum_options.hpp>
#include <letterbox/transport/async_declare_all.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_topology_retry_topology {

namespace {

using namespace std::chrono_literals;

namespace topology = letterbox::topology;

letterbox::topology::retry_topology billing_topology() {
    return {.queue = "billing", .delays = {1s, 10s, 60s}};
}

topology::queue_arguments parsed(const topology::queue& q) {
    std::error_code ec;
    std::string why;
    auto a = topology::queue_arguments::parse(q.arguments, ec, why);
    REQUIRE(a);
    return *a;
}

// The message of the `letterbox::error` that `f` throws, which must be `invalid_argument`.
template <class F>
std::string refusal(F f) {
    try {
        f();
    } catch (const letterbox::error& e) {
        CHECK(e.code() == letterbox::errc::invalid_argument);
        return e.what();
    }
    FAIL("nothing was thrown");
    return {};
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

TEST_CASE("a quorum retry topology declares every queue as a quorum queue, with a delivery "
          "limit on the work queue and at-least-once dead-lettering where it dead-letters",
          "[topology][quorum]") {
    auto topo = billing_topology();
    topo.quorum = topology::quorum_options{};
    const auto qs = topo.queues();
    REQUIRE(qs.size() == 5);
    for (const auto& q : qs) {
        INFO(q.name);
        CHECK(q.durable);
        CHECK_FALSE(q.exclusive);
        CHECK_FALSE(q.auto_delete);
        CHECK(parsed(q).type == topology::queue_type::quorum);
    }
    const auto retry = parsed(qs[0]);
    CHECK(retry.message_ttl == 1s);
    CHECK(retry.dead_letter_routing_key == "billing");
    CHECK(retry.dead_letter_strategy == topology::dead_lettering::at_least_once);
    CHECK(retry.overflow == topology::overflow_behaviour::reject_publish);
    CHECK_FALSE(retry.delivery_limit);
    const auto dlq = parsed(qs[3]);
    CHECK(qs[3].name == "billing.dlq");
    CHECK_FALSE(dlq.dead_letter_exchange); // the end of the line: nothing to dead-letter to
    CHECK_FALSE(dlq.dead_letter_strategy);
    CHECK_FALSE(dlq.delivery_limit);
    // rejects_go_to::nowhere, yet the work queue dead-letters to the DLQ: what its delivery
    // limit gives up on must not vanish.
    const auto work = parsed(qs[4]);
    CHECK(work.dead_letter_exchange == "");
    CHECK(work.dead_letter_routing_key == "billing.dlq");
    CHECK(work.delivery_limit == 20);
    CHECK(work.dead_letter_strategy == topology::dead_lettering::at_least_once);
    CHECK(work.overflow == topology::overflow_behaviour::reject_publish);
}

TEST_CASE("quorum options: at-most-once and the broker's default delivery limit declare "
          "neither argument",
          "[topology][quorum]") {
    auto topo = billing_topology();
    topo.quorum =
        topology::quorum_options{.delivery_limit = std::nullopt,
                                 .dead_letter_strategy = topology::dead_lettering::at_most_once};
    for (const auto& q : topo.queues()) {
        INFO(q.name);
        const auto a = parsed(q);
        CHECK(a.type == topology::queue_type::quorum);
        CHECK_FALSE(a.delivery_limit);
        CHECK_FALSE(a.dead_letter_strategy);
        CHECK_FALSE(a.overflow);
    }
    // A classic topology is what it always was: no quorum argument anywhere.
    for (const auto& q : billing_topology().queues()) {
        INFO(q.name);
        CHECK(parsed(q).type == topology::queue_type::classic);
        CHECK_FALSE(q.arguments.contains(topology::args::delivery_limit));
    }
}

TEST_CASE("a quorum retry topology RabbitMQ would refuse or misread is refused when it is "
          "checked, before anything is declared",
          "[topology][quorum]") {
    auto negative = billing_topology();
    negative.quorum = topology::quorum_options{.delivery_limit = -1};
    CHECK(refusal([&] { negative.queues(); }).find("negative delivery limit") != std::string::npos);
    auto loop = billing_topology();
    loop.rejects = topology::rejects_go_to::retry_queue;
    loop.quorum = topology::quorum_options{.delivery_limit = 5};
    CHECK(refusal([&] { loop.check(); }).find("rejects_go_to::retry_queue") != std::string::npos);
    loop.quorum->delivery_limit = std::nullopt; // then the retry queue is fine
    CHECK(parsed(loop.queues().back()).dead_letter_routing_key == "billing.retry.1000ms");
    topology::retry_topology unnamed{.quorum = topology::quorum_options{}};
    CHECK(refusal([&] { unnamed.check(); }).find("server-named") != std::string::npos);
}

TEST_CASE("a quorum retry topology declares on the 3.10 model, again idempotently, and a changed "
          "delivery limit or queue type is refused as RabbitMQ refuses it",
          "[topology][quorum]") {
    test_support::simulation w;
    letterbox::in_memory::transport t(w.broker, "declarer");
    auto declare = [&](const topology::retry_topology& topo) {
        return w.await([&](auto h) { topology::async_declare_all(t, topo.queues(), h); });
    };
    auto topo = billing_topology();
    topo.quorum = topology::quorum_options{};
    REQUIRE_FALSE(declare(topo));
    REQUIRE_FALSE(declare(topo));
    auto changed = topo;
    changed.quorum->delivery_limit = 7;
    // Seen on 3.10.8: inequivalent arg 'x-delivery-limit' ...: received '7' but current is '20'.
    CHECK(declare(changed) == letterbox::errc::precondition_failed);
    letterbox::in_memory::transport t2(w.broker, "declarer-2");
    auto classic = billing_topology();
    CHECK(w.await([&](auto h) { topology::async_declare_all(t2, classic.queues(), h); }) ==
          letterbox::errc::precondition_failed);
}

} // namespace unit_topology_retry_topology
