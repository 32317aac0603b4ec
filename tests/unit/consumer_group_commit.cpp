// SPDX-License-Identifier: BSL-1.0
// The consumer's group commit (consumer_options::group_commit, docs/group-commit.md): one unit
// of work per batch, acks after its commit, a failing message rolled back alone.

#include <letterbox/consumer.hpp>

#include <letterbox/commit_group.hpp>
#include <letterbox/group_commit_options.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/idempotent.hpp>

#include "unit/consumer_world.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_consumer_group_commit {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;

/// The consumer tests' world, with a queue that dead-letters to `work.dlq`, and an inbox whose
/// units of work are counted: one begun unit is one transaction.
struct world : unit_consumer_support::world {
    letterbox::in_memory_inbox_store inbox;
    int begun = 0;
    std::vector<std::string> applied; // effects, in commit order
    std::function<std::error_code(const letterbox::message&)> fault = [](const auto&) {
        return std::error_code{};
    };

    world() { declare_queue_with_dead_letters("work"); }

    letterbox::message publish(std::string body) {
        letterbox::message m;
        m.id = ids();
        m.routing_key = "work";
        m.body = std::move(body);
        publish_again(m);
        return m;
    }
    void publish_again(const letterbox::message& m) {
        REQUIRE_FALSE(await([&](auto h) { transport.async_publish(m, h); }));
    }

    /// The idempotent handler: the effect appends the body when its unit commits.
    auto handler() {
        return letterbox::idempotent(
            [this](const letterbox::message& m,
                   letterbox::in_memory_unit_of_work& u) -> std::error_code {
                if (auto ec = fault(m))
                    return ec;
                return u.on_commit([this, body = m.body] { applied.push_back(body); });
            },
            inbox,
            [this] {
                ++begun;
                return inbox.begin();
            },
            "worker", clock);
    }

    letterbox::consumer_options options(std::size_t batch) const {
        letterbox::consumer_options o;
        o.consume.queue = "work";
        o.consume.prefetch = 10;
        o.group_commit = {.max_messages = batch, .max_delay = 5ms};
        return o;
    }

    std::size_t recorded() {
        std::error_code ec;
        const auto n = inbox.size(ec);
        REQUIRE_FALSE(ec);
        return n;
    }
};

} // namespace

TEST_CASE("group commit: a full batch is one unit of work, acknowledged after its commit",
          "[consumer][group_commit]") {
    world w;
    letterbox::consumer c(w.transport, w.handler(), w.clock, w.options(4));
    w.start(c);
    for (auto body : {"a", "b", "c"})
        w.publish(body);
    REQUIRE(w.run_until([&] { return c.stats().delivered == 3; }));
    // Three of four: the batch waits, and nothing is committed or acknowledged.
    CHECK(w.begun == 0);
    CHECK(w.broker.total_unacked() == 3);
    CHECK(c.stats().acked == 0);

    w.publish("d");
    REQUIRE(w.run_until([&] { return c.stats().acked == 4; }));
    CHECK(w.begun == 1);
    CHECK(w.applied == std::vector<std::string>{"a", "b", "c", "d"});
    CHECK(w.recorded() == 4);
    CHECK(c.handler().stats().processed == 4);
    REQUIRE(w.run_until([&] { return w.broker.total_unacked() == 0; }));
}

TEST_CASE("group commit: a batch that is not full commits max_delay after its first delivery",
          "[consumer][group_commit]") {
    world w;
    letterbox::consumer c(w.transport, w.handler(), w.clock, w.options(100));
    w.start(c);
    w.publish("a");
    w.publish("b");
    REQUIRE(w.run_until([&] { return c.stats().delivered == 2; }));
    w.clock.advance(4ms);
    w.io.poll();
    CHECK(c.stats().acked == 0);
    CHECK(w.begun == 0);

    w.clock.advance(1ms);
    REQUIRE(w.run_until([&] { return c.stats().acked == 2; }));
    CHECK(w.begun == 1);
    CHECK(w.applied == std::vector<std::string>{"a", "b"});
}

TEST_CASE("group commit: a failing message is rolled back alone and dead-lettered, and its "
          "batch-mates commit",
          "[consumer][group_commit]") {
    world w;
    w.fault = [](const letterbox::message& m) {
        return m.body == "poison" ? make_error_code(errc::payload_malformed) : std::error_code{};
    };
    letterbox::consumer c(w.transport, w.handler(), w.clock, w.options(3));
    w.start(c);
    const auto a = w.publish("a");
    const auto poison = w.publish("poison");
    const auto b = w.publish("b");
    REQUIRE(w.run_until([&] { return c.stats().acked == 2 && c.stats().failed == 1; }));
    CHECK(w.begun == 1);
    CHECK(w.applied == std::vector<std::string>{"a", "b"});
    std::error_code ec;
    CHECK(w.inbox.contains("worker", a.id, ec));
    CHECK(w.inbox.contains("worker", b.id, ec));
    CHECK_FALSE(w.inbox.contains("worker", poison.id, ec)); // its record rolled back with it
    REQUIRE(w.run_until([&] { return w.broker.queue("work.dlq")->ready == 1; }));
    CHECK(w.broker.queue("work")->ready == 0);
}

TEST_CASE("group commit: two copies of one message in one batch have one effect, and both are "
          "acknowledged",
          "[consumer][group_commit]") {
    world w;
    letterbox::consumer c(w.transport, w.handler(), w.clock, w.options(3));
    w.start(c);
    const auto a = w.publish("a");
    w.publish_again(a);
    w.publish("b");
    REQUIRE(w.run_until([&] { return c.stats().acked == 3; }));
    CHECK(w.applied == std::vector<std::string>{"a", "b"});
    CHECK(c.handler().stats().duplicates == 1);
    CHECK(w.recorded() == 2);
}

TEST_CASE("group commit: a commit that fails keeps nothing, and the batch is handled again "
          "after the store back-off",
          "[consumer][group_commit]") {
    world w;
    bool failed_once = false;
    // The last message's effect makes the store's next operation fail: the group's commit.
    w.fault = [&](const letterbox::message& m) {
        if (m.body == "c" && !failed_once) {
            failed_once = true;
            w.inbox.fail_nth(0, errc::store_busy);
        }
        return std::error_code{};
    };
    letterbox::consumer c(w.transport, w.handler(), w.clock, w.options(3));
    w.start(c);
    for (auto body : {"a", "b", "c"})
        w.publish(body);
    REQUIRE(w.run_until([&] { return c.stats().failed == 3; }));
    CHECK(w.applied.empty());
    CHECK(w.recorded() == 0);
    CHECK(c.stats().acked == 0);
    CHECK(w.broker.total_unacked() == 3); // held for the back-off, not requeued

    w.clock.advance(100ms); // consumer_options::store_retry_initial
    REQUIRE(w.run_until([&] { return c.stats().acked == 3; }));
    // Handled again after a store failure, each one commits on its own: a message whose
    // commit always fails could otherwise hold its batch-mates back for ever.
    CHECK(w.begun == 4);
    CHECK(w.applied == std::vector<std::string>{"a", "b", "c"});
    CHECK(w.recorded() == 3);
    CHECK(c.stats().delivered == 3);
}

TEST_CASE("group commit refuses an asynchronous handler and a delay that is not positive",
          "[consumer][group_commit]") {
    world w;
    auto async_handler = [](const letterbox::message&) -> boost::asio::awaitable<void> {
        co_return;
    };
    auto o = w.options(4);
    CHECK_THROWS_AS(letterbox::consumer(w.transport, async_handler, w.clock, o), letterbox::error);
    o.group_commit.max_delay = 0ms;
    CHECK_THROWS_AS(letterbox::consumer(w.transport, w.handler(), w.clock, o), letterbox::error);
    o.group_commit.max_messages = 1; // off: each delivery commits on its own
    CHECK_NOTHROW(letterbox::consumer(w.transport, w.handler(), w.clock, o));
}

TEST_CASE("group commit with a handler_executor runs each batch there in one go",
          "[consumer][group_commit][threads]") {
    world w;
    boost::asio::thread_pool pool(2);
    auto o = w.options(3);
    o.handler_executor = pool.get_executor();
    letterbox::consumer c(w.transport, w.handler(), w.clock, o);
    w.start(c);
    for (auto body : {"a", "b", "c", "d", "e", "f"})
        w.publish(body);
    REQUIRE(w.run_until([&] { return c.stats().acked == 6; }));
    pool.join();
    CHECK(w.begun == 2); // two batches of three, one after the other
    CHECK(w.applied == std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
    CHECK(w.recorded() == 6);
}

TEST_CASE("group commit takes at most max_messages into a batch, however many wait",
          "[consumer][group_commit]") {
    world w;
    // The batches run on an executor this test runs by hand, so that deliveries pile up
    // while one batch is out.
    boost::asio::io_context batches;
    auto o = w.options(3);
    o.handler_executor = batches.get_executor();
    letterbox::consumer c(w.transport, w.handler(), w.clock, o);
    w.start(c);
    for (auto body : {"a", "b", "c"})
        w.publish(body);
    REQUIRE(w.run_until([&] { return c.stats().delivered == 3; }));
    for (auto body : {"d", "e", "f", "g"})
        w.publish(body);
    REQUIRE(w.run_until([&] { return c.stats().delivered == 7; })); // 4 wait, 1 over a batch
    for (int round = 0; round < 10 && c.stats().acked < 7; ++round) {
        batches.restart();
        batches.poll();
        w.clock.advance(5ms); // the last, short batch waits for max_delay
        w.io.poll();
    }
    CHECK(c.stats().acked == 7);
    CHECK(w.begun == 3); // 3 + 3 + 1
    CHECK(w.applied == std::vector<std::string>{"a", "b", "c", "d", "e", "f", "g"});
}

} // namespace unit_consumer_group_commit
