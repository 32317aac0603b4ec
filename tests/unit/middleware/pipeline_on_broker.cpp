// SPDX-License-Identifier: BSL-1.0

// The retry, redelivery and dead-letter middleware carried out by a consumer on the in-memory
// RabbitMQ model, on one thread with a virtual clock: poison isolation, the x-death history
// of broker-side retry, and attempt counts that survive a consumer crash.

#include <letterbox/consumer.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/middleware/retry.hpp>

#include <letterbox/backoff/fixed.hpp>
#include <letterbox/backoff/immediate.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/async_declare_all.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace unit_middleware_pipeline_on_broker {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
namespace headers = letterbox::headers;
namespace mw = letterbox::middleware;
namespace backoff = letterbox::backoff;

struct world : test_support::simulation {
    letterbox::message_id_generator ids{23};

    void declare(letterbox::in_memory::transport& t,
                 const letterbox::topology::retry_topology& topo) {
        REQUIRE_FALSE(
            await([&](auto h) { letterbox::topology::async_declare_all(t, topo.queues(), h); }));
    }

    letterbox::message publish(letterbox::in_memory::transport& t, const std::string& queue,
                               std::string body) {
        letterbox::message m;
        m.id = ids();
        m.routing_key = queue;
        m.body = std::move(body);
        REQUIRE_FALSE(await([&](auto h) { t.async_publish(m, h); }));
        return m;
    }

    template <class Consumer>
    std::string start(Consumer& c) {
        std::optional<std::string> tag;
        c.async_start([&](std::error_code ec, std::string t) {
            REQUIRE_FALSE(ec);
            tag = std::move(t);
        });
        REQUIRE(drive_until([&] { return tag.has_value(); }));
        return *tag;
    }

    std::size_t ready(const std::string& queue) const {
        auto q = broker.queue(queue);
        return q ? q->ready : 0;
    }
};

// Everything in the dead-letter queue, in order, by draining it with basic.get.
std::vector<letterbox::message> drain(world& w, const std::string& queue) {
    std::vector<letterbox::message> out;
    auto conn = w.broker.connect("drain");
    auto ch = conn.open_channel();
    for (std::size_t i = 0; i < 10'000; ++i) {
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

const letterbox::field_table* death_entry(const letterbox::message& m, const std::string& queue,
                                          const std::string& reason) {
    const auto* v = m.headers.find(headers::x_death);
    if (!v || !v->get_if<letterbox::field_array>())
        return nullptr;
    for (const auto& e : *v->get_if<letterbox::field_array>()) {
        const auto* t = e.get_if<letterbox::field_table>();
        if (t && t->get<std::string>("queue") == queue && t->get<std::string>("reason") == reason)
            return t;
    }
    return nullptr;
}

/// Consumer options for the queue "billing" whose observer appends the reason of every event of
/// kind `k` to `into`.
letterbox::consumer_options billing_reasons_of(letterbox::consumer_event::kind k,
                                               std::vector<std::string>& into) {
    return {.consume = {.queue = "billing"}, .on_event = [k, &into](const auto& e) {
                if (e.what == k)
                    into.emplace_back(e.reason);
            }};
}

} // namespace

TEST_CASE("a poison message among 99 good ones is delivered max-attempts times, then "
          "dead-lettered with its reason, and none of the others waits behind it",
          "[middleware][poison]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    const letterbox::topology::retry_topology topo{.queue = "billing", .delays = {30s}};
    w.declare(t, topo);

    const auto policy = backoff::fixed(30s, 4);
    std::map<std::string, int> runs; // body -> handler runs
    std::set<std::string> done;
    std::optional<std::chrono::steady_clock::duration> all_good_done_at;
    const auto start = w.clock.now();
    auto handle = [&](const letterbox::message& m) {
        ++runs[m.body];
        if (m.body == "poison")
            throw std::runtime_error("the ledger rejects this order");
        done.insert(m.body);
        if (done.size() == 99)
            all_good_done_at = w.clock.now() - start;
    };
    auto pipeline = mw::compose(handle, mw::dead_letter({.consumer_id = "billing"}, w.clock),
                                mw::redelivery(policy, topo, w.clock));
    // Prefetch 1: if the poison message blocked the queue, everything would wait behind it.
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing", .prefetch = 1}});
    w.start(c);

    for (int i = 0; i < 99; ++i) {
        if (i == 10)
            w.publish(t, "billing", "poison");
        w.publish(t, "billing", "good-" + std::to_string(i));
    }
    REQUIRE(w.drive_until([&] { return w.ready("billing.dlq") == 1; }));
    REQUIRE(w.drive_until([&] { return w.broker.total_unacked() == 0; }));

    CHECK(runs["poison"] == 4); // exactly max attempts
    CHECK(done.size() == 99);
    REQUIRE(all_good_done_at);
    CHECK(*all_good_done_at < 30s); // all done before the poison's first retry delay ended
    for (int i = 0; i < 99; ++i)
        CHECK(runs["good-" + std::to_string(i)] == 1);
    CHECK(c.stats().redelivered == 3);
    CHECK(c.stats().dead_lettered == 1);
    CHECK(c.stats().acked == 99);
    CHECK(w.ready("billing") == 0);
    CHECK(w.ready("billing.retry.30000ms") == 0);

    const auto dead = drain(w, "billing.dlq");
    REQUIRE(dead.size() == 1);
    const auto& m = dead.front();
    CHECK(m.body == "poison");
    CHECK(m.headers.get<std::string>(headers::death_reason) == "retries-exhausted");
    CHECK(m.headers.find(headers::attempts)->as_integer() == 4);
    CHECK(m.headers.get<std::string>(headers::exception_message) ==
          "the ledger rejects this order");
    CHECK(m.headers.get<std::string>(headers::original_queue) == "billing");
    CHECK(m.headers.get<std::string>(headers::consumer_id) == "billing");
}

TEST_CASE("an undecodable payload is permanent: dead-lettered on its first delivery",
          "[middleware][poison]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    const letterbox::topology::retry_topology topo{.queue = "billing", .delays = {1s, 10s}};
    w.declare(t, topo);
    int runs = 0;
    auto decode = [&](const letterbox::message& m) {
        ++runs;
        const auto doc = nlohmann::json::parse(m.body); // throws on a truncated payload
        CHECK(doc.contains("amount"));
    };
    auto pipeline = mw::compose(decode, mw::dead_letter({}, w.clock),
                                mw::redelivery(backoff::fixed(1s, 5), topo, w.clock),
                                mw::retry(backoff::immediate(3)));
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c);
    w.publish(t, "billing", R"({"amount": 12)");
    w.publish(t, "billing", R"({"amount": 12})");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1 && c.stats().dead_lettered == 1; }));
    CHECK(runs == 2);
    const auto dead = drain(w, "billing.dlq");
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].headers.get<std::string>(headers::death_reason) == "permanent-failure");
    CHECK_THAT(dead[0].headers.get<std::string>(headers::exception_type).value_or(""),
               Catch::Contains("nlohmann"));
}

TEST_CASE("rejected three times across a retry queue, the message reaches the DLQ with an "
          "x-death history of the right counts and reasons, a replay then succeeds",
          "[middleware][x_death]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    const letterbox::topology::retry_topology topo{
        .queue = "billing",
        .delays = {5s},
        .rejects = letterbox::topology::rejects_go_to::retry_queue};
    w.declare(t, topo);
    int runs = 0;
    bool fixed = false;
    auto handle = [&](const letterbox::message&) {
        ++runs;
        if (!fixed)
            throw std::runtime_error("downstream unavailable");
    };
    auto pipeline = mw::compose(
        handle, mw::dead_letter({}, w.clock),
        mw::redelivery(backoff::fixed(5s, 4), topo, w.clock, mw::redelivery_via::reject));
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c);
    const auto sent = w.publish(t, "billing", "order-1");
    REQUIRE(w.drive_until([&] { return w.ready("billing.dlq") == 1; }));
    CHECK(runs == 4);
    CHECK(c.stats().redelivered == 3);

    letterbox::dlq::dead_letter_queue dead(t, "billing.dlq");
    std::optional<std::vector<letterbox::dlq::dead_letter_entry>> entries;
    dead.async_browse({}, {}, [&](std::error_code ec, auto e) {
        REQUIRE_FALSE(ec);
        entries = std::move(e);
    });
    REQUIRE(w.drive_until([&] { return entries.has_value(); }));
    REQUIRE(entries->size() == 1);
    const auto& m = entries->front().msg;
    CHECK(m.id == sent.id);
    const auto* rejected = death_entry(m, "billing", "rejected");
    const auto* expired = death_entry(m, "billing.retry.5000ms", "expired");
    REQUIRE(rejected);
    REQUIRE(expired);
    CHECK(rejected->find("count")->as_integer() == 3);
    CHECK(expired->find("count")->as_integer() == 3);
    CHECK(m.headers.get<std::string>(headers::x_first_death_reason) == "rejected");
    CHECK(m.headers.get<std::string>(headers::x_first_death_queue) == "billing");
    CHECK(m.headers.get<std::string>(headers::death_reason) == "retries-exhausted");
    CHECK(m.headers.find(headers::attempts)->as_integer() == 4);
    CHECK(entries->front().attempts == 4);

    // The fix is deployed; the replay puts it back on "billing" with a clean count.
    fixed = true;
    std::optional<letterbox::dlq::replay_result> replay;
    dead.async_replay({}, [&](std::error_code ec, letterbox::dlq::replay_result r) {
        REQUIRE_FALSE(ec);
        replay = std::move(r);
    });
    REQUIRE(w.drive_until([&] { return replay.has_value() && c.stats().acked == 1; }));
    CHECK(replay->replayed == 1);
    CHECK(runs == 5);
    CHECK(w.ready("billing.dlq") == 0);
    CHECK(w.broker.total_unacked() == 0);
}

TEST_CASE("the attempt count survives a consumer crash in the middle of handling",
          "[middleware][crash]") {
    world w;
    const letterbox::topology::retry_topology topo{.queue = "billing", .delays = {10s}};
    const auto policy = backoff::fixed(10s, 4);
    int runs = 0;
    bool crash_next = false;
    std::vector<std::int64_t> seen_attempts;

    auto t1 = std::make_unique<letterbox::in_memory::transport>(w.broker, "billing-1");
    w.declare(*t1, topo);
    auto handle = [&](const letterbox::message& m) {
        ++runs;
        const auto* a = m.headers.find(headers::attempts);
        seen_attempts.push_back(a ? a->as_integer().value_or(-1) : 0);
        if (crash_next) {
            // The process dies here: its connection drops with the delivery unacked, and
            // nothing after this line runs for it (its settlement finds a closed transport).
            crash_next = false;
            t1->async_close([](std::error_code) {});
        }
        throw std::runtime_error("still failing");
    };
    auto pipeline =
        mw::compose(handle, mw::dead_letter({}, w.clock), mw::redelivery(policy, topo, w.clock));
    auto c1 = std::make_unique<letterbox::consumer<letterbox::in_memory::transport,
                                                   decltype(pipeline), letterbox::virtual_clock>>(
        *t1, pipeline, w.clock, letterbox::consumer_options{.consume = {.queue = "billing"}});
    w.start(*c1);
    w.publish(*t1, "billing", "order-7");
    // The first attempt fails and goes to the retry queue with attempts = 1.
    REQUIRE(w.drive_until([&] { return w.ready("billing.retry.10000ms") == 1; }));
    crash_next = true;
    // The second attempt crashes the consumer mid-handling.
    REQUIRE(w.drive_until([&] { return runs == 2 && w.broker.total_unacked() == 0; }));
    REQUIRE(w.ready("billing") == 1); // the broker requeued it
    c1.reset();
    t1.reset();

    // Restart: a new process, a new connection, the same pipeline.
    letterbox::in_memory::transport t2(w.broker, "billing-2");
    letterbox::consumer c2(t2, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c2);
    REQUIRE(w.drive_until([&] { return w.ready("billing.dlq") == 1; }));
    // Attempts 1 and 2 (the crash) saw 0 and 1; after the restart it went on from 1, not 0:
    // the count lives in the message.
    CHECK(seen_attempts == std::vector<std::int64_t>{0, 1, 1, 2, 3});
    const auto dead = drain(w, "billing.dlq");
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].headers.find(headers::attempts)->as_integer() == 4);
}

TEST_CASE("an in-process retry delay waits on the consumer's clock, holding the delivery",
          "[middleware][retry]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    const letterbox::topology::retry_topology topo{.queue = "billing"};
    w.declare(t, topo);
    int runs = 0;
    std::size_t unacked_while_waiting = 0;
    auto handle = [&](const letterbox::message&) {
        if (++runs == 2)
            unacked_while_waiting = w.broker.total_unacked();
        if (runs < 3)
            throw std::runtime_error("deadlock victim");
    };
    auto pipeline = mw::compose(handle, mw::retry(backoff::fixed(2s, 3)));
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c);
    const auto start = w.clock.now();
    w.publish(t, "billing", "order-1");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1; }));
    CHECK(runs == 3);
    CHECK(w.clock.now() - start >= 4s);
    CHECK(unacked_while_waiting == 1); // the prefetch slot stayed taken
    CHECK(c.stats().retried == 2);
    CHECK(c.stats().delivered == 1);
}

TEST_CASE("immediate in-process retries are counted and reported, each with what failed",
          "[middleware][retry]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    const letterbox::topology::retry_topology topo{.queue = "billing"};
    w.declare(t, topo);
    int runs = 0;
    auto handle = [&](const letterbox::message&) {
        if (++runs < 3)
            throw std::runtime_error("deadlock victim " + std::to_string(runs));
    };
    std::vector<std::string> retried;
    auto pipeline = mw::compose(handle, mw::retry(backoff::immediate(3)));
    letterbox::consumer c(t, pipeline, w.clock,
                          billing_reasons_of(letterbox::consumer_event::kind::retried, retried));
    w.start(c);
    w.publish(t, "billing", "order-1");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1; }));
    CHECK(runs == 3);
    CHECK(c.stats().retried == 2);
    CHECK(retried == std::vector<std::string>{"deadlock victim 1", "deadlock victim 2"});
}

TEST_CASE("a redelivery is reported with what failed", "[middleware][redelivery]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    const letterbox::topology::retry_topology topo{.queue = "billing", .delays = {1s}};
    w.declare(t, topo);
    int runs = 0;
    auto handle = [&](const letterbox::message&) {
        if (++runs == 1)
            throw std::runtime_error("warehouse API timed out");
    };
    std::vector<std::string> redelivered;
    auto pipeline = mw::compose(handle, mw::redelivery(backoff::fixed(1s, 3), topo, w.clock));
    letterbox::consumer c(
        t, pipeline, w.clock,
        billing_reasons_of(letterbox::consumer_event::kind::redelivered, redelivered));
    w.start(c);
    w.publish(t, "billing", "order-1");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1; }));
    CHECK(c.stats().redelivered == 1);
    CHECK(redelivered == std::vector<std::string>{"warehouse API timed out"});
}

TEST_CASE("a forward whose publish fails requeues the original: nothing is lost",
          "[middleware][redelivery]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    // The work queue exists, its retry queue does not: the copy is returned (no route).
    const letterbox::topology::retry_topology topo{.queue = "billing", .delays = {1s}};
    REQUIRE_FALSE(w.await([&](auto h) { t.async_declare(topo.queues().back(), h); }));
    int runs = 0;
    auto handle = [&](const letterbox::message&) {
        if (++runs == 1)
            throw std::runtime_error("first try fails");
    };
    auto pipeline = mw::compose(handle, mw::redelivery(backoff::fixed(1s, 3), topo, w.clock));
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c);
    w.publish(t, "billing", "order-1");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1; }));
    CHECK(c.stats().forward_failed == 1);
    CHECK(c.stats().redelivered == 0);
    CHECK(c.stats().delivered == 2); // the requeued original came back and succeeded
    CHECK(w.ready("billing") == 0);
}

TEST_CASE("a replay interrupted between republish and remove loses nothing, and the inbox "
          "absorbs the duplicate",
          "[middleware][dlq][interrupted_replay]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    const letterbox::topology::retry_topology topo{.queue = "billing"};
    w.declare(t, topo);
    letterbox::in_memory_inbox_store inbox;
    int effects = 0;
    bool fixed = false;
    auto h = letterbox::idempotent(
        [&](const letterbox::message&, letterbox::in_memory_unit_of_work& u) {
            if (!fixed)
                throw letterbox::error(errc::payload_malformed, "field 'amount' missing");
            return u.on_commit([&] { ++effects; });
        },
        inbox, [] { return letterbox::in_memory_unit_of_work{}; }, "billing", w.clock);
    auto pipeline = mw::compose(h, mw::dead_letter({}, w.clock));
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c);
    const auto sent = w.publish(t, "billing", R"({"total": 5})");
    REQUIRE(w.drive_until([&] { return w.ready("billing.dlq") == 1; }));
    fixed = true;

    // The operator's replay dies after the republish was confirmed, before the remove.
    {
        letterbox::in_memory::transport ops(w.broker, "ops-1");
        letterbox::dlq::dead_letter_queue dead(
            ops, "billing.dlq",
            {.after_republish_before_remove = [](const letterbox::dlq::dead_letter_entry&) {
                throw std::runtime_error("killed");
            }});
        std::optional<std::error_code> finished;
        dead.async_replay(
            {}, [&](std::error_code ec, letterbox::dlq::replay_result) { finished = ec; });
        REQUIRE(w.drive_until([&] { return finished.has_value(); }));
        CHECK(*finished == errc::internal_error);
        REQUIRE_FALSE(w.await([&](auto done) { ops.async_close(done); }));
    }
    // The republished copy was handled; the original is back in the DLQ: nothing lost.
    REQUIRE(w.drive_until([&] { return effects == 1 && w.ready("billing.dlq") == 1; }));

    // Replaying again produces a duplicate of a handled message: the inbox absorbs it.
    letterbox::in_memory::transport ops(w.broker, "ops-2");
    letterbox::dlq::dead_letter_queue dead(ops, "billing.dlq");
    std::optional<letterbox::dlq::replay_result> replay;
    dead.async_replay({}, [&](std::error_code ec, letterbox::dlq::replay_result r) {
        REQUIRE_FALSE(ec);
        replay = std::move(r);
    });
    REQUIRE(w.drive_until([&] {
        return replay.has_value() && c.handler().inner().stats().duplicates == 1 &&
               w.broker.total_unacked() == 0;
    }));
    CHECK(replay->replayed == 1);
    CHECK(effects == 1);
    CHECK(c.handler().inner().stats().processed == 1);
    CHECK(w.ready("billing.dlq") == 0);
    CHECK(w.ready("billing") == 0);
    std::error_code ec;
    CHECK(inbox.contains("billing", sent.id, ec));
    CHECK_FALSE(ec);
}

TEST_CASE("a message waiting in a retry queue survives a consumer restart, and declaring the "
          "topology again changes nothing",
          "[middleware][redelivery][restart]") {
    world w;
    const letterbox::topology::retry_topology topo{.queue = "billing", .delays = {1min}};
    int runs = 0;
    std::vector<std::int64_t> seen_attempts;
    auto handle = [&](const letterbox::message& m) {
        const auto* a = m.headers.find(headers::attempts);
        seen_attempts.push_back(a ? a->as_integer().value_or(-1) : 0);
        if (++runs == 1)
            throw std::runtime_error("payment gateway timeout");
    };
    auto pipeline = mw::compose(handle, mw::dead_letter({}, w.clock),
                                mw::redelivery(backoff::fixed(1min, 3), topo, w.clock));
    {
        letterbox::in_memory::transport t1(w.broker, "billing-1");
        w.declare(t1, topo);
        letterbox::consumer c1(t1, pipeline, w.clock, {.consume = {.queue = "billing"}});
        w.start(c1);
        w.publish(t1, "billing", "order-9");
        REQUIRE(w.drive_until([&] { return c1.stats().redelivered == 1; }));
        REQUIRE_FALSE(w.await([&](auto h) { t1.async_close(h); }));
    } // the first process is gone while the message waits
    CHECK(w.ready("billing.retry.60000ms") == 1);
    CHECK(w.broker.total_unacked() == 0); // waiting holds no delivery anywhere

    letterbox::in_memory::transport t2(w.broker, "billing-2");
    w.declare(t2, topo); // every start declares again: idempotent
    letterbox::consumer c2(t2, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c2);
    const auto before = w.clock.now();
    REQUIRE(w.drive_until([&] { return c2.stats().acked == 1; }));
    CHECK(w.clock.now() - before <= 1min);
    CHECK(seen_attempts == std::vector<std::int64_t>{0, 1});
    CHECK(w.ready("billing.dlq") == 0);

    // The same names with other arguments are refused, as RabbitMQ refuses them.
    const letterbox::topology::retry_topology changed{
        .queue = "billing",
        .delays = {1min},
        .rejects = letterbox::topology::rejects_go_to::dead_letter_queue};
    CHECK(w.await([&](auto h) {
        letterbox::topology::async_declare_all(t2, changed.queues(), h);
    }) == errc::precondition_failed);
}

namespace {

// A foreign publisher (the seeds' Node.js sendToQueue, aio-pika's Message): no message-id, so
// each of its messages carries the nil id. It publishes on a raw channel of the model, which
// assigns nothing.
void publish_without_id(world& w, const std::string& queue, std::string body) {
    auto conn = w.broker.connect("foreign-publisher");
    auto ch = conn.open_channel();
    letterbox::message m;
    m.routing_key = queue;
    m.body = std::move(body);
    REQUIRE_FALSE(ch.basic_publish(std::move(m)));
    conn.close();
}

} // namespace

TEST_CASE("messages without a message id are dead-lettered with the reason "
          "missing-idempotency-key, each of them, and the others are handled",
          "[middleware][idempotent][poison]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    const letterbox::topology::retry_topology topo{.queue = "billing", .delays = {1s}};
    w.declare(t, topo);
    letterbox::in_memory_inbox_store inbox;
    std::map<std::string, int> effects;
    auto effect = [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
        return u.on_commit([&effects, body = m.body] { ++effects[body]; });
    };
    auto pipeline = mw::compose(
        letterbox::idempotent(
            effect, inbox, [] { return letterbox::in_memory_unit_of_work{}; }, "billing", w.clock),
        mw::dead_letter({}, w.clock), mw::redelivery(backoff::fixed(1s, 3), topo, w.clock),
        mw::retry(backoff::immediate(3)));
    letterbox::consumer c(t, pipeline, w.clock, {.consume = {.queue = "billing"}});
    w.start(c);
    publish_without_id(w, "billing", "order-1");
    w.publish(t, "billing", "order-2");
    publish_without_id(w, "billing", "order-3");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1 && c.stats().dead_lettered == 2; }));
    CHECK(c.stats().delivered == 3); // refused at once: no retry, no redelivery
    CHECK(effects == std::map<std::string, int>{{"order-2", 1}});
    const auto dead = drain(w, "billing.dlq");
    REQUIRE(dead.size() == 2);
    for (const auto& m : dead) {
        CHECK(m.headers.get<std::string>(headers::death_reason) == "missing-idempotency-key");
        CHECK(m.headers.find(headers::attempts)->as_integer() == 1);
    }
    CHECK(dead[0].body == "order-1");
    CHECK(dead[1].body == "order-3");
}

TEST_CASE("a consumer that requeues failures still rejects a permanent one, so it cannot loop",
          "[middleware][idempotent][poison]") {
    world w;
    letterbox::in_memory::transport t(w.broker, "billing");
    const letterbox::topology::retry_topology topo{
        .queue = "billing", .rejects = letterbox::topology::rejects_go_to::dead_letter_queue};
    w.declare(t, topo);
    letterbox::in_memory_inbox_store inbox;
    int runs = 0;
    auto h = letterbox::idempotent(
        [&](const letterbox::message&, letterbox::in_memory_unit_of_work&) { ++runs; }, inbox,
        [] { return letterbox::in_memory_unit_of_work{}; }, "billing", w.clock);
    letterbox::consumer c(
        t, h, w.clock,
        {.consume = {.queue = "billing"}, .on_failure = letterbox::failure_action::requeue});
    w.start(c);
    publish_without_id(w, "billing", "order-1");
    REQUIRE(w.drive_until([&] { return w.ready("billing.dlq") == 1; }));
    CHECK(c.stats().delivered == 1);
    CHECK(c.stats().failed == 1);
    CHECK(runs == 0);
    CHECK(w.ready("billing") == 0);
}

} // namespace unit_middleware_pipeline_on_broker
