// SPDX-License-Identifier: BSL-1.0

// The redelivery and dead-letter layers on quorum queues, on the in-memory broker (RabbitMQ
// 3.10's profile): attempts counted from x-delivery-count, a consumer crash counted as an
// attempt, the work queue's delivery limit bounding a message that crashes the consumer every
// time, and which of the two limits fires first. tests/integration/quorum_queues.cpp runs the
// same stories on a real broker.

#include <letterbox/consumer.hpp>
#include <letterbox/middleware/attempts_before.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/redelivery.hpp>

#include <letterbox/backoff/fixed.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/receive_endpoint.hpp>
#include <letterbox/topology/quorum_options.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/async_declare_all.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace unit_middleware_pipeline_on_quorum_queues {

namespace {

using namespace std::chrono_literals;
namespace headers = letterbox::headers;
namespace mw = letterbox::middleware;
namespace backoff = letterbox::backoff;
namespace topology = letterbox::topology;

struct world : test_support::simulation {
    letterbox::message_id_generator ids{29};

    void declare(letterbox::in_memory::transport& t, const topology::retry_topology& topo) {
        REQUIRE_FALSE(await([&](auto h) { topology::async_declare_all(t, topo.queues(), h); }));
    }

    void publish(letterbox::in_memory::transport& t, const std::string& queue) {
        letterbox::message m;
        m.id = ids();
        m.routing_key = queue;
        m.body = R"({"order":7})";
        REQUIRE_FALSE(await([&](auto h) { t.async_publish(m, h); }));
    }

    template <class Consumer>
    void start(Consumer& c) {
        std::optional<std::error_code> started;
        c.async_start([&](std::error_code ec, const std::string&) { started = ec; });
        REQUIRE(drive_until([&] { return started.has_value(); }));
        REQUIRE_FALSE(*started);
    }

    std::size_t ready(const std::string& queue) const {
        auto q = broker.queue(queue);
        return q ? q->ready : 0;
    }

    // Everything in `queue`, taken with basic.get.
    std::vector<letterbox::message> drain(const std::string& queue) {
        std::vector<letterbox::message> out;
        auto conn = broker.connect("drain");
        auto ch = conn.open_channel();
        for (std::size_t i = 0; i < 1'000; ++i) {
            std::error_code ec;
            auto d = ch.basic_get(queue, ec, true);
            REQUIRE_FALSE(ec);
            if (!d)
                break;
            out.push_back(*d->msg);
        }
        conn.close();
        return out;
    }
};

topology::retry_topology quorum_topology(std::optional<std::int64_t> delivery_limit) {
    return {.queue = "billing",
            .delays = {10s},
            .quorum = topology::quorum_options{.delivery_limit = delivery_limit}};
}

// The attempt a handler of "billing" is in: what the layers count, plus this one.
std::uint32_t attempt_of(const letterbox::message& m) {
    return mw::attempts_before(letterbox::delivery{.msg = m, .queue = "billing"}) + 1;
}

std::string death_reason_of(const letterbox::message& m, const std::string& queue) {
    const auto* v = m.headers.find(headers::x_death);
    if (!v || !v->get_if<letterbox::field_array>())
        return {};
    for (const auto& e : *v->get_if<letterbox::field_array>())
        if (const auto* t = e.get_if<letterbox::field_table>();
            t && t->get<std::string>(headers::x_death_field::queue) == queue)
            return t->get<std::string>(headers::x_death_field::reason).value_or("");
    return {};
}

} // namespace

TEST_CASE("on quorum queues a handler that fails twice, then succeeds, runs attempts 1, 2 and 3",
          "[middleware][quorum]") {
    world w;
    const auto topo = quorum_topology(20);
    letterbox::in_memory::transport t(w.broker, "billing");
    w.declare(t, topo);
    REQUIRE(w.broker.queue("billing")->type == topology::queue_type::quorum);
    REQUIRE(w.broker.queue("billing.retry.10000ms")->type == topology::queue_type::quorum);
    std::vector<std::uint32_t> attempts;
    auto handle = [&](const letterbox::message& m) {
        attempts.push_back(attempt_of(m));
        if (attempts.back() < 3)
            throw std::runtime_error("payment provider timed out");
    };
    auto pipeline = mw::compose(handle, mw::dead_letter({}, w.clock),
                                mw::redelivery(backoff::fixed(10s, 4), topo, w.clock));
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c);
    w.publish(t, "billing");
    REQUIRE(w.drive_until([&] { return attempts.size() == 3 && w.broker.total_unacked() == 0; }));
    CHECK(attempts == std::vector<std::uint32_t>{1, 2, 3});
    CHECK(w.ready("billing.dlq") == 0);
    CHECK(w.ready("billing.retry.10000ms") == 0);
}

TEST_CASE("on a quorum queue a consumer crash is an attempt: the count goes on from it",
          "[middleware][quorum][crash]") {
    world w;
    const auto topo = quorum_topology(20);
    const auto policy = backoff::fixed(10s, 4);
    std::vector<std::uint32_t> attempts;
    bool crash_next = false;
    auto t1 = std::make_unique<letterbox::in_memory::transport>(w.broker, "billing-1");
    w.declare(*t1, topo);
    auto handle = [&](const letterbox::message& m) {
        attempts.push_back(attempt_of(m));
        if (crash_next) {
            // The process dies here: its connection drops with the delivery unacked.
            crash_next = false;
            t1->async_close([](std::error_code) {});
        }
        throw std::runtime_error("still failing");
    };
    auto pipeline =
        mw::compose(handle, mw::dead_letter({}, w.clock), mw::redelivery(policy, topo, w.clock));
    using consumer_type = letterbox::consumer<letterbox::in_memory::transport, decltype(pipeline),
                                              letterbox::virtual_clock>;
    auto c1 = std::make_unique<consumer_type>(
        *t1, pipeline, w.clock, letterbox::consumer_options{.consume = {.queue = "billing"}});
    w.start(*c1);
    w.publish(*t1, "billing");
    REQUIRE(w.drive_until([&] { return w.ready("billing.retry.10000ms") == 1; }));
    crash_next = true; // attempt 2 crashes the consumer mid-handling
    REQUIRE(w.drive_until([&] { return attempts.size() == 2 && w.broker.total_unacked() == 0; }));
    REQUIRE(w.ready("billing") == 1);
    c1.reset();
    t1.reset();

    letterbox::in_memory::transport t2(w.broker, "billing-2");
    letterbox::consumer c2(t2, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c2);
    REQUIRE(w.drive_until([&] { return w.ready("billing.dlq") == 1; }));
    // On a classic queue the crash leaves no trace and the runs see 1, 2, 2, 3, 4
    // (pipeline_on_broker.cpp); the quorum queue's x-delivery-count counts it, and the copy
    // made after it does not count it twice.
    CHECK(attempts == std::vector<std::uint32_t>{1, 2, 3, 4});
    const auto dead = w.drain("billing.dlq");
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].headers.find(headers::attempts)->as_integer() == 4);
    CHECK(dead[0].headers.get<std::string>(headers::death_reason) == "retries-exhausted");
}

TEST_CASE("a message that crashes the consumer every time is dead-lettered by the work queue's "
          "delivery limit, with the broker's reason delivery_limit",
          "[middleware][quorum][poison]") {
    world w;
    const auto topo = quorum_topology(2);
    {
        letterbox::in_memory::transport t(w.broker, "setup");
        w.declare(t, topo);
        w.publish(t, "billing");
    }
    int runs = 0;
    letterbox::in_memory::transport* current = nullptr;
    auto handle = [&](const letterbox::message&) {
        ++runs;
        current->async_close([](std::error_code) {}); // the process dies, every time
    };
    auto pipeline = mw::compose(handle, mw::dead_letter({}, w.clock),
                                mw::redelivery(backoff::fixed(10s, 10), topo, w.clock));
    for (int restart = 0; restart < 10 && w.ready("billing.dlq") == 0; ++restart) {
        letterbox::in_memory::transport t(w.broker, "billing-" + std::to_string(restart));
        current = &t;
        letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing"}});
        w.start(c);
        REQUIRE(
            w.drive_until([&] { return runs == restart + 1 && w.broker.total_unacked() == 0; }));
    }
    // Delivery limit 2: the first delivery and two returns, then the broker gives up. Neither
    // layer ever saw a failure, so no letterbox reason: the broker's x-death says why.
    CHECK(runs == 3);
    CHECK(w.ready("billing") == 0);
    const auto dead = w.drain("billing.dlq");
    REQUIRE(dead.size() == 1);
    CHECK(death_reason_of(dead[0], "billing") == "delivery_limit");
    CHECK(dead[0].headers.get<std::string>(headers::x_first_death_reason) == "delivery_limit");
    CHECK_FALSE(dead[0].headers.contains(headers::death_reason));
}

TEST_CASE("for a handler that fails, letterbox's max attempts fires before the delivery limit: "
          "each retry is a new message to the quorum queue",
          "[middleware][quorum][poison]") {
    world w;
    const auto topo = quorum_topology(1);
    letterbox::in_memory::transport t(w.broker, "billing");
    w.declare(t, topo);
    int runs = 0;
    auto handle = [&](const letterbox::message&) {
        ++runs;
        throw std::runtime_error("card declined by the fraud check");
    };
    auto pipeline = mw::compose(handle, mw::dead_letter({}, w.clock),
                                mw::redelivery(backoff::fixed(10s, 4), topo, w.clock));
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c);
    w.publish(t, "billing");
    REQUIRE(w.drive_until([&] { return w.ready("billing.dlq") == 1; }));
    CHECK(runs == 4); // more than the limit's 2 deliveries: none of them was a return
    const auto dead = w.drain("billing.dlq");
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].headers.get<std::string>(headers::death_reason) == "retries-exhausted");
    CHECK(dead[0].headers.find(headers::attempts)->as_integer() == 4);
    CHECK(death_reason_of(dead[0], "billing").empty());
}

TEST_CASE("a consumer that requeues its failures is bounded by the delivery limit",
          "[middleware][quorum][poison]") {
    world w;
    const auto topo = quorum_topology(3);
    letterbox::in_memory::transport t(w.broker, "billing");
    w.declare(t, topo);
    int runs = 0;
    auto handle = [&](const letterbox::message&) {
        ++runs;
        throw std::runtime_error("always");
    };
    letterbox::consumer c(
        t, mw::compose(handle), w.clock,
        {.consume = {.queue = "billing"}, .on_failure = letterbox::failure_action::requeue});
    w.start(c);
    w.publish(t, "billing");
    REQUIRE(w.drive_until([&] { return w.ready("billing.dlq") == 1; }));
    CHECK(runs == 4);
    const auto dead = w.drain("billing.dlq");
    REQUIRE(dead.size() == 1);
    CHECK(death_reason_of(dead[0], "billing") == "delivery_limit");
}

TEST_CASE("a receive endpoint declares quorum queues, and refuses quorum options RabbitMQ "
          "would misread when it is made",
          "[middleware][quorum][receive_endpoint]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "orders");
    const auto orders = letterbox::receive_endpoint(
                            t, w.clock, {.queue = "orders", .quorum = topology::quorum_options{}})
                            .redelivery(backoff::fixed(1s, 3));
    REQUIRE_FALSE(w.await([&](auto h) { orders.async_declare(h); }));
    for (const auto* name : {"orders", "orders.retry.1000ms", "orders.dlq"}) {
        INFO(name);
        REQUIRE(w.broker.queue(name));
        CHECK(w.broker.queue(name)->type == topology::queue_type::quorum);
    }
    CHECK_THROWS_AS(letterbox::receive_endpoint(
                        t, w.clock, {.queue = "", .quorum = topology::quorum_options{}}),
                    letterbox::error);
}

} // namespace unit_middleware_pipeline_on_quorum_queues
