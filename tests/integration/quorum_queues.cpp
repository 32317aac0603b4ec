// SPDX-License-Identifier: BSL-1.0

// Quorum queues on a real RabbitMQ (LETTERBOX_AMQP_URL; 3.10 in `make test`): a retry topology
// of quorum queues with at-least-once dead-lettering is declared, a handler that fails twice
// and then succeeds runs attempts 1, 2 and 3 through a quorum retry queue, a message that
// crashes the consumer every time is dead-lettered by the work queue's delivery limit, a
// handler that fails is dead-lettered by letterbox's own max attempts first, and an
// at-least-once queue keeps a dead letter it cannot route. Every wait is bounded.
// tests/unit/middleware/pipeline_on_quorum_queues.cpp runs the same stories on the model.

#include <letterbox/topology/quorum_options.hpp>

#include <letterbox/amqp/transport.hpp>
#include <letterbox/backoff/fixed.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/middleware/attempts_before.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/async_declare_all.hpp>

#include "amqp_broker.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace integration_quorum_queues {

namespace {

using namespace std::chrono_literals;
namespace lb = letterbox;
namespace mw = letterbox::middleware;
namespace topology = letterbox::topology;
using fixture = amqp_test::amqp_transport_fixture;

constexpr auto patience = 30s; // the bound of every wait below

// The topology's queues, forgotten by a shared broker ten minutes after the test.
std::vector<topology::queue> expiring_queues(const topology::retry_topology& topo) {
    auto queues = topo.queues();
    for (auto& q : queues)
        q.arguments.set(topology::args::expires, std::int64_t{600'000});
    return queues;
}

void declare(fixture& f, lb::amqp::transport& t, const topology::retry_topology& topo) {
    const auto queues = expiring_queues(topo);
    REQUIRE_FALSE(amqp_test::await(f, [&](auto h) { topology::async_declare_all(t, queues, h); }));
}

void publish(fixture& f, lb::amqp::transport& t, const std::string& queue) {
    static lb::message_id_generator ids; // test-only state
    lb::message m;
    m.id = ids();
    m.routing_key = queue;
    m.body = R"({"order":7})";
    REQUIRE_FALSE(amqp_test::await(f, [&](auto h) { t.async_publish(m, h); }));
}

// The ready messages of `queue` (a passive declare: up to date on a quorum queue, §0.3 15).
std::uint32_t depth(fixture& f, lb::amqp::transport& t, const std::string& queue) {
    std::optional<std::uint32_t> n;
    t.async_queue_depth(queue, [&](std::error_code ec, std::uint32_t d) {
        CHECK_FALSE(ec);
        n = ec ? 0 : d;
    });
    REQUIRE(f.run_until([&] { return n.has_value(); }, patience));
    return *n;
}

// Polls `done` every 50 ms until it holds; false after `patience`.
template <class Done>
bool eventually(fixture& f, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        f.run_until([] { return false; }, 50ms); // the poll interval, not an assertion
    }
    return true;
}

std::optional<lb::delivery> get(fixture& f, lb::amqp::transport& t, const std::string& queue) {
    std::optional<std::optional<lb::delivery>> got;
    t.async_get(queue, [&](std::error_code ec, std::optional<lb::delivery> d) {
        CHECK_FALSE(ec);
        got = std::move(d);
    });
    REQUIRE(f.run_until([&] { return got.has_value(); }, patience));
    return *got;
}

template <class Consumer>
void start(fixture& f, Consumer& c) {
    std::optional<std::error_code> started;
    c.async_start([&](std::error_code ec, const std::string&) { started = ec; });
    REQUIRE(f.run_until([&] { return started.has_value(); }, patience));
    REQUIRE_FALSE(*started);
}

// The attempt a handler of `queue` is in: what the layers count, plus this one.
std::uint32_t attempt_of(const lb::message& m, const std::string& queue) {
    return mw::attempts_before(lb::delivery{.msg = m, .queue = queue}) + 1;
}

std::string death_reason_of(const lb::message& m, const std::string& queue) {
    const auto* v = m.headers.find(lb::headers::x_death);
    if (!v || !v->get_if<lb::field_array>())
        return {};
    for (const auto& e : *v->get_if<lb::field_array>())
        if (const auto* t = e.get_if<lb::field_table>();
            t && t->get<std::string>(lb::headers::x_death_field::queue) == queue)
            return t->get<std::string>(lb::headers::x_death_field::reason).value_or("");
    return {};
}

} // namespace

TEST_CASE("quorum queues: a retry topology of quorum queues is declared, and a handler that "
          "fails twice then succeeds runs attempts 1, 2 and 3",
          "[.integration][amqp][quorum]") {
    fixture f;
    auto t = f.make();
    const std::string queue = f.unique_name("quorum.flaky");
    const topology::retry_topology topo{
        .queue = queue, .delays = {200ms}, .quorum = topology::quorum_options{}};
    declare(f, t, topo);
    declare(f, t, topo); // idempotent: the same arguments again
    {
        // They are quorum queues: declared again as classic, the broker refuses it.
        auto other = f.make();
        topology::retry_topology classic = topo;
        classic.quorum.reset();
        const auto queues = expiring_queues(classic);
        CHECK(amqp_test::await(f, [&](auto h) { topology::async_declare_all(other, queues, h); }) ==
              lb::errc::precondition_failed);
    }

    lb::steady_clock clock;
    std::vector<std::uint32_t> attempts;
    auto handle = [&](const lb::message& m) {
        attempts.push_back(attempt_of(m, queue));
        if (attempts.back() < 3)
            throw std::runtime_error("payment provider timed out");
    };
    auto pipeline = mw::compose(handle, mw::dead_letter({}, clock),
                                mw::redelivery(lb::backoff::fixed(200ms, 4), topo, clock));
    lb::consumer c(t, pipeline, clock, {.consume = {.queue = queue, .prefetch = 1}});
    start(f, c);
    publish(f, t, queue);
    REQUIRE(f.run_until([&] { return c.stats().acked == 1; }, patience));
    CHECK(attempts == std::vector<std::uint32_t>{1, 2, 3});
    CHECK(c.stats().redelivered == 2); // through the quorum retry queue, twice
    CHECK(c.stats().dead_lettered == 0);
    CHECK_FALSE(get(f, t, topo.dead_letter_queue_name()));
    CHECK_FALSE(amqp_test::await(f, [&](auto h) { t.async_close(h); }));
}

TEST_CASE("quorum queues: a message that crashes the consumer every time is dead-lettered by "
          "the delivery limit, with the reason delivery_limit",
          "[.integration][amqp][quorum]") {
    fixture f;
    auto observer = f.make();
    const std::string queue = f.unique_name("quorum.crash");
    const topology::retry_topology topo{
        .queue = queue, .delays = {200ms}, .quorum = topology::quorum_options{.delivery_limit = 2}};
    declare(f, observer, topo);
    publish(f, observer, queue);

    lb::steady_clock clock;
    std::vector<std::uint32_t> attempts;
    lb::amqp::transport* current = nullptr;
    bool closed = false;
    auto handle = [&](const lb::message& m) {
        attempts.push_back(attempt_of(m, queue));
        // The process dies here: its connection goes with the delivery unacknowledged, and
        // the ack the pipeline asks for next finds the connection closing.
        current->async_close([&closed](std::error_code) { closed = true; });
    };
    auto pipeline = mw::compose(handle, mw::dead_letter({}, clock),
                                mw::redelivery(lb::backoff::fixed(200ms, 10), topo, clock));
    const auto dlq = topo.dead_letter_queue_name();
    for (int restart = 0; restart < 5 && depth(f, observer, dlq) == 0; ++restart) {
        INFO("restart " << restart);
        auto t = f.make();
        current = &t;
        closed = false;
        lb::consumer c(t, pipeline, clock, {.consume = {.queue = queue, .prefetch = 1}});
        start(f, c);
        REQUIRE(f.run_until([&] { return closed; }, patience));
        // Back in the work queue for the next process, or past the limit and in the DLQ.
        REQUIRE(eventually(
            f, [&] { return depth(f, observer, queue) + depth(f, observer, dlq) == 1; }));
    }
    // x-delivery-count told each run how many crashed before it; after the first delivery and
    // two returns the broker gave up. No letterbox layer saw a failure: the reason is the
    // broker's.
    CHECK(attempts == std::vector<std::uint32_t>{1, 2, 3});
    CHECK(depth(f, observer, queue) == 0);
    const auto dead = get(f, observer, dlq);
    REQUIRE(dead);
    CHECK(death_reason_of(dead->msg, queue) == "delivery_limit");
    CHECK(dead->msg.headers.get<std::string>(lb::headers::x_first_death_reason) ==
          std::string("delivery_limit"));
    CHECK_FALSE(dead->msg.headers.contains(lb::headers::death_reason));
    CHECK_FALSE(amqp_test::await(f, [&](auto h) { observer.async_close(h); }));
}

TEST_CASE("quorum queues: for a handler that fails, letterbox's max attempts fires before the "
          "delivery limit, with the reason retries-exhausted",
          "[.integration][amqp][quorum]") {
    fixture f;
    auto t = f.make();
    const std::string queue = f.unique_name("quorum.poison");
    const topology::retry_topology topo{
        .queue = queue, .delays = {100ms}, .quorum = topology::quorum_options{.delivery_limit = 1}};
    declare(f, t, topo);
    lb::steady_clock clock;
    int runs = 0;
    auto handle = [&](const lb::message&) {
        ++runs;
        throw std::runtime_error("card declined by the fraud check");
    };
    auto pipeline = mw::compose(handle, mw::dead_letter({.consumer_id = "billing"}, clock),
                                mw::redelivery(lb::backoff::fixed(100ms, 3), topo, clock));
    lb::consumer c(t, pipeline, clock, {.consume = {.queue = queue, .prefetch = 1}});
    start(f, c);
    publish(f, t, queue);
    REQUIRE(f.run_until([&] { return c.stats().dead_lettered == 1; }, patience));
    CHECK(runs == 3); // more than the limit's 2 deliveries: each retry is a new message
    const auto dead = get(f, t, topo.dead_letter_queue_name());
    REQUIRE(dead);
    const auto& h = dead->msg.headers;
    CHECK(h.get<std::string>(lb::headers::death_reason) == std::string("retries-exhausted"));
    CHECK(h.find(lb::headers::attempts)->as_integer() == 3);
    CHECK(h.get<std::string>(lb::headers::consumer_id) == std::string("billing"));
    CHECK(death_reason_of(dead->msg, queue).empty()); // the broker dead-lettered nothing
    CHECK_FALSE(amqp_test::await(f, [&](auto h2) { t.async_close(h2); }));
}

TEST_CASE("quorum queues: with at-least-once dead-lettering the broker keeps a dead letter it "
          "cannot route, where at-most-once drops it",
          "[.integration][amqp][quorum]") {
    if (!amqp_test::broker_is_controllable())
        return;
    fixture f;
    auto t = f.make();
    const std::string nowhere = f.unique_name("quorum.missing-target");
    auto declare_source = [&](topology::dead_lettering strategy) {
        topology::queue_arguments a;
        a.type = topology::queue_type::quorum;
        a.dead_letter_exchange = "";
        a.dead_letter_routing_key = nowhere; // no such queue
        a.expires = std::chrono::minutes{10};
        a.dead_letter_strategy = strategy;
        if (strategy == topology::dead_lettering::at_least_once)
            a.overflow = topology::overflow_behaviour::reject_publish;
        topology::queue q{.name = f.unique_name("quorum.source"), .arguments = a.to_table()};
        q.check();
        REQUIRE_FALSE(amqp_test::await(f, [&](auto h) { t.async_declare(q, h); }));
        publish(f, t, q.name);
        auto d = get(f, t, q.name);
        REQUIRE(d);
        REQUIRE_FALSE(amqp_test::await(f, [&](auto h) { t.async_reject(*d, false, h); }));
        return q.name;
    };
    const auto kept = declare_source(topology::dead_lettering::at_least_once);
    const auto dropped = declare_source(topology::dead_lettering::at_most_once);
    // The queue's own count of messages waiting for their dead-letter target (3.10+).
    auto waiting = [](const std::string& name) {
        const auto out = amqp_test::rabbitmqctl_eval(
            "{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<\"/\">>, queue, <<\"" + name +
            "\">>)), rabbit_amqqueue:info(Q, [messages_dlx]).");
        REQUIRE(out);
        return *out;
    };
    CHECK(
        eventually(f, [&] { return waiting(kept).find("{messages_dlx,1}") != std::string::npos; }));
    CHECK(waiting(dropped).find("{messages_dlx,0}") != std::string::npos);
    CHECK(depth(f, t, kept) == 0); // kept, but not ready: no consumer sees it again
    CHECK_FALSE(amqp_test::await(f, [&](auto h) { t.async_close(h); }));
}

} // namespace integration_quorum_queues
