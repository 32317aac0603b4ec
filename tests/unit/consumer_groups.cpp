// SPDX-License-Identifier: BSL-1.0
// The consumer's message groups (consumer_options::groups, docs/message-groups.md): one group's
// deliveries one at a time and in order, groups side by side up to the concurrency, messages
// without a key refused or alone, and a retried message kept at its group's head or not.

#include <letterbox/consumer.hpp>

#include <letterbox/backoff/fixed.hpp>
#include <letterbox/group_key.hpp>
#include <letterbox/group_options.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/topology/group_partitions.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/async_declare_all.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/simulation.hpp"
#include "unit/consumer_world.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace unit_consumer_groups {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
namespace headers = letterbox::headers;
namespace mw = letterbox::middleware;

/// The consumer tests' world, with a queue that may dead-letter to `<queue>.dlq`, and messages
/// published in a group.
struct world : unit_consumer_support::sim_world {
    void declare(const std::string& name, bool dead_letters = false) {
        if (dead_letters)
            unit_consumer_support::declare_with_dead_letters(*this, name);
        else
            sim_world::declare(name);
    }

    /// Publishes `body` to `queue` in `group` (no header when empty).
    void publish(const std::string& queue, const std::string& group, std::string body) {
        letterbox::field_table h;
        if (!group.empty())
            h.set(headers::group, group);
        sim_world::publish(queue, std::move(body), std::move(h));
    }
};

/// What a coroutine handler saw: each run's start and end on the virtual clock, by body.
struct trace {
    struct run {
        std::string body;
        std::string group;
        letterbox::virtual_clock::time_point start, end;
    };
    std::vector<run> runs;
    std::size_t running = 0, most_at_once = 0;
};

/// A handler that takes `delay(body)` of virtual time and records the run in `t`.
template <class Delay>
auto timed_handler(world& w, trace& t, Delay delay) {
    return [&w, &t, delay](const letterbox::message& m) -> boost::asio::awaitable<void> {
        trace::run r{
            m.body, m.headers.get<std::string>(headers::group).value_or(""), w.clock.now(), {}};
        t.most_at_once = std::max(t.most_at_once, ++t.running);
        auto timer = w.clock.make_timer(w.io.get_executor());
        timer.expires_after(delay(m.body));
        co_await timer.async_wait(boost::asio::use_awaitable);
        --t.running;
        r.end = w.clock.now();
        t.runs.push_back(std::move(r));
    };
}

letterbox::consumer_options grouped(std::size_t prefetch, std::size_t concurrency = 0) {
    letterbox::consumer_options o;
    o.consume.queue = "orders";
    o.consume.prefetch = static_cast<std::uint16_t>(prefetch);
    o.groups.key = letterbox::group_key::standard{};
    o.groups.concurrency = concurrency;
    return o;
}

} // namespace

TEST_CASE("consumer groups: a group's deliveries run one at a time in order, and groups overlap",
          "[consumer][groups]") {
    world w;
    w.declare("orders");
    std::mt19937 rng(7);
    std::map<std::string, std::chrono::milliseconds> delays;
    std::vector<std::string> published;
    for (int i = 1; i <= 10; ++i)
        for (const std::string customer : {"A", "B", "C"}) {
            const auto body = customer + std::to_string(i);
            delays[body] = std::chrono::milliseconds(10 + rng() % 90);
            w.publish("orders", customer, body);
            published.push_back(body);
        }
    trace t;
    auto handler = timed_handler(w, t, [&](const std::string& b) { return delays.at(b); });
    letterbox::consumer c(w.transport, handler, w.clock, grouped(8));
    w.start(c);
    REQUIRE(w.drive_until([&] { return c.stats().acked == 30 && w.held("orders") == 0; }));
    std::map<std::string, std::vector<std::string>> order;
    std::map<std::string, letterbox::virtual_clock::time_point> last_end;
    std::vector<trace::run> by_start = t.runs;
    std::sort(by_start.begin(), by_start.end(),
              [](const auto& a, const auto& b) { return a.start < b.start; });
    for (const auto& r : by_start) {
        // No run of a group starts before the one before it ended.
        if (const auto it = last_end.find(r.group); it != last_end.end())
            CHECK(it->second <= r.start);
        last_end[r.group] = r.end;
        order[r.group].push_back(r.body);
    }
    for (const std::string customer : {"A", "B", "C"}) {
        std::vector<std::string> expected;
        for (int i = 1; i <= 10; ++i)
            expected.push_back(customer + std::to_string(i));
        CHECK(order[customer] == expected);
    }
    // The three groups ran side by side, never two runs of one group at once.
    CHECK(t.most_at_once == 3);
}

TEST_CASE("consumer groups across processes: group_partitions keep each group in order over two "
          "workers, and a lost worker's partitions fail over",
          "[consumer][groups]") {
    world w;
    const letterbox::topology::group_partitions layout{.name = "orders", .partitions = 4};
    REQUIRE_FALSE(w.await([&](auto h) {
        letterbox::topology::async_declare_all(w.transport, layout.declarations(), h);
    }));
    auto publish_wave = [&](int from, int to) {
        for (int n = from; n <= to; ++n)
            for (int g = 0; g < 8; ++g) {
                letterbox::message m;
                m.id = w.ids();
                m.exchange = layout.name;
                m.body = "g" + std::to_string(g) + "-" + std::to_string(n);
                m.headers.set(headers::group, "g" + std::to_string(g));
                REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_publish(m, h); }));
            }
    };
    // Each message went to one partition, and the eight groups to more than one.
    publish_wave(1, 5);
    std::size_t stored = 0, used = 0;
    for (std::uint32_t i = 0; i < layout.partitions; ++i) {
        const auto ready = w.broker.queue(layout.partition_name(i))->ready;
        stored += ready;
        used += ready != 0 ? 1 : 0;
    }
    CHECK(stored == 40);
    CHECK(used > 1);

    // Two worker processes (each its own connection), each consuming every partition with
    // groups on; worker a registers first, so it is the active consumer everywhere.
    std::vector<std::pair<std::string, std::string>> handled; // (worker, body)
    letterbox::in_memory::transport worker_a(w.broker, "worker-a"), worker_b(w.broker, "worker-b");
    auto handler = [&handled](std::string who) {
        return [&handled, who](const letterbox::message& m) {
            handled.emplace_back(who, m.body);
        };
    };
    using consumer_type =
        decltype(letterbox::consumer(worker_a, handler("a"), w.clock, grouped(8)));
    std::vector<consumer_type> consumers;
    consumers.reserve(2 * layout.partitions);
    for (auto* t : {&worker_a, &worker_b})
        for (std::uint32_t i = 0; i < layout.partitions; ++i) {
            auto o = grouped(8);
            o.consume.queue = layout.partition_name(i);
            consumers.emplace_back(*t, handler(t == &worker_a ? "a" : "b"), w.clock, o);
            w.start(consumers.back());
        }
    REQUIRE(w.drive_until([&] { return handled.size() == 40; }));
    CHECK(
        std::all_of(handled.begin(), handled.end(), [](const auto& h) { return h.first == "a"; }));

    // Worker a goes away: b takes over every partition, and the groups go on in order.
    REQUIRE_FALSE(w.await([&](auto h) { worker_a.async_close(h); }));
    publish_wave(6, 10);
    REQUIRE(w.drive_until([&] { return handled.size() == 80; }));
    std::map<std::string, std::vector<int>> order;
    for (std::size_t k = 40; k < handled.size(); ++k)
        CHECK(handled[k].first == "b");
    for (const auto& [who, body] : handled)
        order[body.substr(0, body.find('-'))].push_back(std::stoi(body.substr(body.find('-') + 1)));
    REQUIRE(order.size() == 8);
    for (const auto& [group, seen] : order)
        CHECK(seen == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
}

TEST_CASE("consumer groups: no more groups run at once than the concurrency allows",
          "[consumer][groups]") {
    world w;
    w.declare("orders");
    for (int i = 0; i < 12; ++i)
        w.publish("orders", "g" + std::to_string(i % 6), "m" + std::to_string(i));
    trace t;
    auto handler = timed_handler(w, t, [](const std::string&) { return 50ms; });
    letterbox::consumer c(w.transport, handler, w.clock, grouped(12, 2));
    w.start(c);
    REQUIRE(w.drive_until([&] { return c.stats().acked == 12; }));
    CHECK(t.most_at_once == 2);
    // Twelve runs of 50 ms, two at a time: 300 ms.
    const auto first = t.runs.front().start;
    CHECK(t.runs.back().end - first == 300ms);
}

TEST_CASE("consumer groups: a message without a key is refused with its reason, or is a group of "
          "its own",
          "[consumer][groups]") {
    SECTION("refused: rejected to the dead-letter exchange, the others handled") {
        world w;
        w.declare("orders", true);
        std::vector<std::string> reasons;
        auto o = grouped(4);
        o.on_event = [&](const letterbox::consumer_event& e) {
            if (e.what == letterbox::consumer_event::kind::dead_lettered)
                reasons.emplace_back(e.reason);
        };
        trace t;
        letterbox::consumer c(w.transport, timed_handler(w, t, [](auto&) { return 1ms; }), w.clock,
                              o);
        w.start(c);
        w.publish("orders", "A", "A1");
        w.publish("orders", "", "nobody's");
        w.publish("orders", "A", "A2");
        REQUIRE(w.drive_until([&] { return c.stats().acked == 2 && w.held("orders.dlq") == 1; }));
        CHECK(c.stats().dead_lettered == 1);
        CHECK(c.stats().failed == 0);
        CHECK(reasons == std::vector<std::string>{"missing-group-key"});
        CHECK(t.runs.size() == 2);
    }
    SECTION("its own group: handled beside the others") {
        world w;
        w.declare("orders");
        auto o = grouped(4);
        o.groups.on_missing_key = letterbox::missing_group_key::own_group;
        trace t;
        letterbox::consumer c(w.transport, timed_handler(w, t, [](auto&) { return 10ms; }), w.clock,
                              o);
        w.start(c);
        w.publish("orders", "", "x1");
        w.publish("orders", "", "x2");
        w.publish("orders", "", "x3");
        REQUIRE(w.drive_until([&] { return c.stats().acked == 3; }));
        CHECK(t.most_at_once == 3);
    }
    SECTION("a key function that throws finds no key") {
        world w;
        w.declare("orders", true);
        auto o = grouped(4);
        o.groups.key = [](const letterbox::message&) -> std::optional<std::string> {
            throw std::runtime_error("unreadable");
        };
        trace t;
        letterbox::consumer c(w.transport, timed_handler(w, t, [](auto&) { return 1ms; }), w.clock,
                              o);
        w.start(c);
        w.publish("orders", "A", "A1");
        REQUIRE(w.drive_until([&] { return w.held("orders.dlq") == 1; }));
        CHECK(t.runs.empty());
    }
}

namespace {

/// A1 fails once, through the broker's retry queue with a 1 s delay; A2 and B1 succeed. Returns
/// the order of the successful runs and the consumer's stats.
struct retry_outcome {
    std::vector<std::string> handled;
    letterbox::consumer_stats stats;
};

retry_outcome run_with_one_retry(letterbox::group_order order) {
    world w;
    const letterbox::topology::retry_topology topo{.queue = "orders", .delays = {1s}};
    REQUIRE_FALSE(w.await(
        [&](auto h) { letterbox::topology::async_declare_all(w.transport, topo.queues(), h); }));
    retry_outcome out;
    int a1_runs = 0;
    auto handle = [&](const letterbox::message& m) {
        if (m.body == "A1" && ++a1_runs == 1)
            throw std::runtime_error("warehouse timed out");
        out.handled.push_back(m.body);
    };
    auto pipeline =
        mw::compose(handle, mw::redelivery(letterbox::backoff::fixed(1s, 3), topo, w.clock));
    auto o = grouped(8);
    o.groups.order = order;
    letterbox::consumer c(w.transport, pipeline, w.clock, o);
    w.start(c);
    w.publish("orders", "A", "A1");
    w.publish("orders", "A", "A2");
    w.publish("orders", "B", "B1");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 3 && w.held("orders") == 0; }));
    out.stats = c.stats();
    return out;
}

} // namespace

TEST_CASE("consumer groups: in strict order a retried message keeps its group waiting, in relaxed "
          "order the group's next message overtakes it",
          "[consumer][groups]") {
    SECTION("strict: A1 waits its delay in place, then A2 runs; B1 is not held up") {
        const auto r = run_with_one_retry(letterbox::group_order::strict);
        CHECK(r.handled == std::vector<std::string>{"B1", "A1", "A2"});
        CHECK(r.stats.retried == 1);
        CHECK(r.stats.redelivered == 0);
        CHECK(r.stats.delivered == 3);
    }
    SECTION("relaxed: A1 leaves for the retry queue and comes back after A2") {
        const auto r = run_with_one_retry(letterbox::group_order::relaxed);
        CHECK(r.handled == std::vector<std::string>{"A2", "B1", "A1"});
        CHECK(r.stats.redelivered == 1);
        CHECK(r.stats.delivered == 4);
    }
}

TEST_CASE("consumer groups: in strict order the attempts of a failure that never ends still end",
          "[consumer][groups]") {
    world w;
    const letterbox::topology::retry_topology topo{
        .queue = "orders",
        .delays = {1s},
        .rejects = letterbox::topology::rejects_go_to::dead_letter_queue};
    REQUIRE_FALSE(w.await(
        [&](auto h) { letterbox::topology::async_declare_all(w.transport, topo.queues(), h); }));
    const auto dlq = topo.dead_letter_queue_name();
    int runs = 0;
    std::vector<std::string> handled;
    auto handle = [&](const letterbox::message& m) {
        if (m.body == "A1") {
            ++runs;
            throw std::runtime_error("always down");
        }
        handled.push_back(m.body);
    };
    auto pipeline =
        mw::compose(handle, mw::redelivery(letterbox::backoff::fixed(1s, 3), topo, w.clock));
    letterbox::consumer c(w.transport, pipeline, w.clock, grouped(8));
    w.start(c);
    w.publish("orders", "A", "A1");
    w.publish("orders", "A", "A2");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1 && w.held(dlq) == 1; }));
    // Three attempts (the policy's), then the dead-letter exchange; only then did A2 run.
    CHECK(runs == 3);
    CHECK(handled == std::vector<std::string>{"A2"});
    CHECK(c.stats().retried == 2);
}

TEST_CASE("consumer groups: a dead-letter copy that cannot be published keeps a strict group "
          "waiting, and a relaxed one requeues it",
          "[consumer][groups]") {
    for (const auto order : {letterbox::group_order::strict, letterbox::group_order::relaxed}) {
        world w;
        w.declare("orders"); // no orders.dlq yet: the dead-letter copy is returned
        std::vector<std::string> handled;
        auto handle = [&](const letterbox::message& m) {
            if (m.body == "A1")
                throw letterbox::error(errc::payload_malformed, "permanent");
            handled.push_back(m.body);
        };
        auto pipeline = mw::compose(handle, mw::dead_letter({}, w.clock));
        auto o = grouped(8);
        o.groups.order = order;
        letterbox::consumer c(w.transport, pipeline, w.clock, o);
        w.start(c);
        w.publish("orders", "A", "A1");
        w.publish("orders", "A", "A2");
        REQUIRE(w.drive_until([&] { return c.stats().forward_failed >= 2; }));
        if (order == letterbox::group_order::strict) {
            CHECK(handled.empty()); // A2 waits behind A1, held for another try
            CHECK(c.stats().delivered == 2);
        } else {
            CHECK(handled == std::vector<std::string>{"A2"}); // A1 was requeued, A2 went on
        }
        w.declare("orders.dlq");
        REQUIRE(
            w.drive_until([&] { return c.stats().dead_lettered == 1 && w.held("orders") == 0; }));
        CHECK(handled == std::vector<std::string>{"A2"});
        CHECK(w.held("orders.dlq") == 1);
    }
}

TEST_CASE("consumer groups: blocking handlers on a pool keep each group in order",
          "[consumer][groups][threads]") {
    unit_consumer_support::world w;
    letterbox::topology::queue q;
    q.name = "orders";
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_declare(q, h); }));
    boost::asio::thread_pool pool(2);
    std::mutex m;
    std::map<std::string, std::vector<std::string>> seen;
    std::map<std::string, int> inside;
    bool overlapped = false; // two runs of one group at once
    int most_at_once = 0, running = 0;
    auto o = grouped(16);
    o.handler_executor = pool.get_executor();
    letterbox::consumer c(
        w.transport,
        [&](const letterbox::message& msg) {
            const auto group = *msg.headers.get<std::string>(headers::group);
            {
                std::lock_guard lock(m);
                overlapped = overlapped || ++inside[group] > 1;
                most_at_once = std::max(most_at_once, ++running);
            }
            std::this_thread::sleep_for(1ms); // a blocking call
            std::lock_guard lock(m);
            --inside[group];
            --running;
            seen[group].push_back(msg.body);
        },
        o);
    w.start(c);
    std::vector<std::string> expected_a, expected_b;
    for (int i = 1; i <= 20; ++i) {
        for (const std::string g : {"A", "B"}) {
            letterbox::message msg;
            msg.id = w.ids();
            msg.routing_key = "orders";
            msg.body = g + std::to_string(i);
            msg.headers.set(headers::group, g);
            REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_publish(msg, h); }));
            (g == "A" ? expected_a : expected_b).push_back(msg.body);
        }
    }
    REQUIRE(w.run_until([&] { return c.stats().acked == 40; }, 20s));
    pool.join();
    CHECK_FALSE(overlapped);
    CHECK(seen["A"] == expected_a);
    CHECK(seen["B"] == expected_b);
    CHECK(most_at_once <= 2);
}

} // namespace unit_consumer_groups
