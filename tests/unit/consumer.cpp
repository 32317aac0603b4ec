// SPDX-License-Identifier: BSL-1.0

#include <letterbox/consumer.hpp>

#include <letterbox/backoff/fixed.hpp>
#include <letterbox/backoff/immediate.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/simulation.hpp"
#include "unit/consumer_world.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace unit_consumer {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;

using unit_consumer_support::world;

letterbox::consumer_options options_for(std::string queue, letterbox::failure_action a) {
    letterbox::consumer_options o;
    o.consume.queue = std::move(queue);
    o.on_failure = a;
    return o;
}

} // namespace

TEST_CASE("consumer start and stop cancel as the transport's consume and cancel do",
          "[consumer][cancellation]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    REQUIRE_FALSE(w.publish("work", "a"));
    int handled = 0;
    letterbox::consumer c(
        w.transport, [&](const letterbox::message&) { ++handled; },
        options_for("work", letterbox::failure_action::dead_letter));

    boost::asio::cancellation_signal signal;
    std::optional<std::error_code> started;
    c.async_start(boost::asio::bind_cancellation_slot(
        signal.slot(), [&](std::error_code ec, std::string) { started = ec; }));
    signal.emit(boost::asio::cancellation_type::terminal);
    REQUIRE(w.run_until([&] { return started.has_value(); }));
    CHECK(*started == std::errc::operation_canceled);
    CHECK(w.broker.queue("work")->consumers == 0);
    CHECK(handled == 0);

    const auto tag = w.start(c);
    REQUIRE(w.run_until([&] { return handled == 1; }));
    std::optional<std::error_code> stopped;
    c.async_stop(tag, boost::asio::bind_cancellation_slot(
                          signal.slot(), [&](std::error_code ec) { stopped = ec; }));
    signal.emit(boost::asio::cancellation_type::terminal);
    REQUIRE(w.run_until([&] { return stopped.has_value(); }));
    CHECK(*stopped == std::errc::operation_canceled);
    CHECK(w.broker.queue("work")->consumers == 1); // the cancel never ran
}

TEST_CASE("consumer acks what its handler handled and dead-letters what failed", "[consumer]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    std::vector<std::string> seen;
    auto handler = [&](const letterbox::message& m) -> std::error_code {
        seen.push_back(m.body);
        if (m.body == "poison")
            return errc::payload_malformed;
        if (m.body == "throws")
            throw std::runtime_error("handler bug");
        return {};
    };
    letterbox::consumer c(w.transport, handler,
                          options_for("work", letterbox::failure_action::dead_letter));
    w.start(c);
    for (auto body : {"a", "poison", "b", "throws", "c"})
        REQUIRE_FALSE(w.publish("work", body));

    REQUIRE(w.run_until([&] { return c.stats().delivered == 5 && w.broker.total_unacked() == 0; }));
    CHECK(seen == std::vector<std::string>{"a", "poison", "b", "throws", "c"});
    CHECK(c.stats() == letterbox::consumer_stats{5, 3, 2});
    CHECK(w.broker.queue("work")->ready == 0);
    CHECK(w.broker.queue("work.dlq")->ready == 2); // nothing vanished
}

TEST_CASE("consumer requeues a failure when asked to, and the redelivery is flagged",
          "[consumer]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    int calls = 0;
    letterbox::consumer c(
        w.transport,
        [&](const letterbox::message&) -> std::error_code {
            return ++calls == 1 ? make_error_code(errc::timed_out) : std::error_code{};
        },
        options_for("work", letterbox::failure_action::requeue));
    w.start(c);
    REQUIRE_FALSE(w.publish("work", "transient"));
    REQUIRE(w.run_until([&] { return c.stats().acked == 1; }));
    CHECK(calls == 2);
    CHECK(c.stats().failed == 1);
    CHECK(w.broker.queue("work.dlq")->ready == 0);
}

TEST_CASE("consumer acks only after the handler returned: a lost connection redelivers",
          "[consumer]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    int calls = 0;
    letterbox::consumer c(
        w.transport,
        [&](const letterbox::message&) {
            // The connection dies while the handler runs: the ack that follows cannot reach
            // the broker, which requeues the message for the recovered consumer.
            if (++calls == 1)
                w.broker.sever_all();
        },
        options_for("work", letterbox::failure_action::dead_letter));
    w.start(c);
    // The connection dies before the publish's confirm, too: its outcome is unknown, though
    // the broker had stored the message.
    const auto published = w.publish("work", "once");
    CHECK((!published || published == errc::outcome_unknown));
    REQUIRE(w.run_until([&] { return calls == 2 && w.broker.total_unacked() == 0; }));
    CHECK(w.broker.queue("work")->ready == 0);
}

TEST_CASE("consumer holds a delivery whose store failed and handles it again after a wait, "
          "even when it dead-letters others",
          "[consumer]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    int calls = 0;
    letterbox::consumer c(
        w.transport,
        [&](const letterbox::message&) {
            // The first attempt finds the database locked past its retries (as
            // sqlite::database::begin() reports it), the second succeeds.
            if (++calls == 1)
                throw letterbox::error(errc::store_busy, "BEGIN IMMEDIATE");
        },
        options_for("work", letterbox::failure_action::dead_letter));
    w.start(c);
    REQUIRE_FALSE(w.publish("work", "enrollment"));
    REQUIRE(w.run_until([&] { return c.stats().acked == 1; }));
    CHECK(calls == 2);
    CHECK(c.stats().failed == 1);
    CHECK(c.stats().delivered == 1); // held, not requeued: the broker delivered it once
    CHECK(w.broker.queue("work.dlq")->ready == 0); // not dead-lettered
}

namespace {

namespace mw = letterbox::middleware;

using unit_consumer_support::sim_world;

// Runs a consumer whose handler fails for good on the first delivery, behind a dead_letter
// layer whose copy cannot be published, and checks that the original came back.
void expect_original_back_after_failed_dead_letter(sim_world& w, mw::dead_letter_options o) {
    w.declare("work");
    int runs = 0;
    std::size_t held_when_copy_failed = 0;
    auto handle = [&](const letterbox::message&) {
        if (++runs == 1)
            throw letterbox::error(errc::payload_malformed, "permanent: dead-letter it");
    };
    auto pipeline = mw::compose(handle, mw::dead_letter(std::move(o), w.clock));
    letterbox::consumer_options options;
    options.consume.queue = "work";
    options.on_event = [&](const letterbox::consumer_event& e) {
        if (e.what == letterbox::consumer_event::kind::forward_failed)
            held_when_copy_failed = w.held("work");
    };
    letterbox::consumer c(w.transport, pipeline, w.clock, options);
    w.start(c);
    w.publish("work", "enrollment");
    REQUIRE(w.drive_until([&] { return runs == 2 && w.held("work") == 0; }));
    // The copy was refused while the broker still held the original, which then came back,
    // flagged as a redelivery: it was requeued, never acknowledged.
    CHECK(held_when_copy_failed == 1);
    CHECK(c.stats().forward_failed == 1);
    CHECK(c.stats().dead_lettered == 0);
    CHECK(c.stats().delivered == 2);
    CHECK(c.stats().acked == 1);
    CHECK(w.broker.counters().redelivered == 1);
}

} // namespace

TEST_CASE("consumer: a dead-letter copy returned for want of its queue brings the original back "
          "instead of acking it",
          "[consumer][dead_letter]") {
    sim_world w; // "work.dlq" is never declared: the copy is returned (no route)
    expect_original_back_after_failed_dead_letter(w, {.consumer_id = "billing"});
    CHECK_FALSE(w.broker.queue("work.dlq").has_value());
}

TEST_CASE("consumer: a dead-letter copy refused for want of its exchange brings the original "
          "back instead of acking it",
          "[consumer][dead_letter]") {
    sim_world w; // the exchange "dead-letters" is never declared: 404 NOT_FOUND
    expect_original_back_after_failed_dead_letter(
        w, {.exchange = "dead-letters", .routing_key = "work.dlq", .consumer_id = "billing"});
    CHECK_FALSE(w.broker.has_exchange("dead-letters"));
}

TEST_CASE("consumer: an inbox that fails once with store_busy gets the message handled again, "
          "never counted as a duplicate",
          "[consumer][idempotent]") {
    // The inbox's first operation fails (try_record), or its second (the commit: the unit
    // of work that recorded the message fails to commit).
    const std::size_t failing = GENERATE(0, 1);
    CAPTURE(failing);
    sim_world w;
    w.declare("work");
    w.declare("work.dlq");
    letterbox::in_memory_inbox_store inbox;
    std::map<letterbox::message_id, int> effects; // applied only when the unit commits
    auto effect = [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
        return u.on_commit([&effects, id = m.id] { ++effects[id]; });
    };
    auto handler = letterbox::idempotent(
        effect, inbox, [] { return letterbox::in_memory_unit_of_work{}; }, "billing", w.clock);
    auto pipeline = mw::compose(handler, mw::dead_letter({.consumer_id = "billing"}, w.clock));
    letterbox::consumer c(w.transport, pipeline, w.clock, {.consume = {.queue = "work"}});
    w.start(c);
    inbox.fail_nth(failing, errc::store_busy);
    const auto m = w.publish("work", "enrollment");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1 && w.held("work") == 0; }));

    CHECK(effects == std::map<letterbox::message_id, int>{{m.id, 1}});
    CHECK(handler.stats() ==
          letterbox::idempotent_stats{.processed = 1, .duplicates = 0, .failed = 1});
    std::error_code ec;
    CHECK(inbox.contains("billing", m.id, ec));
    CHECK(c.stats().delivered == 1); // held and handled again, not requeued
    CHECK(c.stats().failed == 1);
    CHECK(c.stats().dead_lettered == 0);
    CHECK(w.held("work.dlq") == 0);
}

namespace {

// A handler that fails each message's first run, so the retry layer holds it for a delay.
struct fails_first_run {
    std::map<std::string, int>* runs;
    void operator()(const letterbox::message& m) const {
        if (++(*runs)[m.body] == 1)
            throw std::runtime_error("not yet");
    }
};

auto held_for_a_second(world& w, std::map<std::string, int>& runs) {
    return letterbox::consumer(
        w.transport,
        letterbox::middleware::compose(
            fails_first_run{&runs}, letterbox::middleware::retry(letterbox::backoff::fixed(1s, 2))),
        w.clock, options_for("work", letterbox::failure_action::dead_letter));
}

} // namespace

TEST_CASE("consumer async_wait_idle completes only once every delivery is settled and the queue "
          "is drained",
          "[consumer]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    std::map<std::string, int> runs;
    auto c = held_for_a_second(w, runs);

    // Not consuming, empty queue: idle at once.
    std::optional<std::error_code> idle;
    c.async_wait_idle([&](std::error_code ec) { idle = ec; });
    REQUIRE(w.run_until([&] { return idle.has_value(); }));
    CHECK_FALSE(*idle);

    w.start(c);
    for (const char* body : {"a", "b", "c"})
        REQUIRE_FALSE(w.publish("work", body));
    idle.reset();
    c.async_wait_idle([&](std::error_code ec) { idle = ec; });
    // Each message failed once and waits a second of virtual time: not idle.
    REQUIRE(w.run_until([&] { return runs.size() == 3; }));
    CHECK_FALSE(w.run_until([&] { return idle.has_value(); }, 50ms));
    w.clock.advance(1s);
    REQUIRE(w.run_until([&] { return idle.has_value(); }));
    CHECK_FALSE(*idle);
    CHECK(c.stats().acked == 3);
    CHECK(w.broker.queue("work")->ready == 0);
    CHECK(w.broker.queue("work")->unacked == 0);
}

TEST_CASE("consumer async_wait_idle waits while the queue holds messages nobody takes, and is "
          "cancelled by any cancellation type",
          "[consumer][cancellation]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    REQUIRE_FALSE(w.publish("work", "a")); // the consumer never starts
    std::map<std::string, int> runs;
    auto c = held_for_a_second(w, runs);
    for (auto type :
         {boost::asio::cancellation_type::terminal, boost::asio::cancellation_type::partial,
          boost::asio::cancellation_type::total}) {
        boost::asio::cancellation_signal signal;
        std::optional<std::error_code> idle;
        c.async_wait_idle(boost::asio::bind_cancellation_slot(
            signal.slot(), [&](std::error_code ec) { idle = ec; }));
        CHECK_FALSE(w.run_until([&] { return idle.has_value(); }, 50ms));
        signal.emit(type);
        REQUIRE(w.run_until([&] { return idle.has_value(); }));
        CHECK(*idle == std::errc::operation_canceled);
    }
    CHECK(runs.empty());
}

TEST_CASE("consumer async_shutdown cancels the consumer, then waits for the deliveries it holds",
          "[consumer]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    std::map<std::string, int> runs;
    auto c = held_for_a_second(w, runs);
    const auto tag = w.start(c);
    REQUIRE_FALSE(w.publish("work", "a"));
    REQUIRE(w.run_until([&] { return runs.size() == 1; }));

    std::optional<std::error_code> stopped;
    c.async_shutdown(tag, [&](std::error_code ec) { stopped = ec; });
    REQUIRE(w.run_until([&] { return w.broker.queue("work")->consumers == 0; }));
    REQUIRE_FALSE(w.publish("work", "b")); // no longer consumed
    CHECK_FALSE(w.run_until([&] { return stopped.has_value(); }, 50ms));
    w.clock.advance(1s); // the held delivery runs again and is acked
    REQUIRE(w.run_until([&] { return stopped.has_value(); }));
    CHECK_FALSE(*stopped);
    CHECK(runs == std::map<std::string, int>{{"a", 2}});
    CHECK(c.stats().acked == 1);
    CHECK(w.broker.queue("work")->ready == 1);

    std::optional<std::error_code> again;
    c.async_shutdown(tag, [&](std::error_code ec) { again = ec; });
    REQUIRE(w.run_until([&] { return again.has_value(); }));
    CHECK_FALSE(*again); // as basic.cancel of a gone tag: nothing to cancel, nothing held
}

TEST_CASE("consumer waits for a coroutine handler without holding the transport's executor, "
          "and acks when it completes",
          "[consumer][async]") {
    sim_world w;
    w.declare("work");
    w.declare("side");
    auto timer = std::make_shared<decltype(w.clock.make_timer(w.io.get_executor()))>(
        w.clock.make_timer(w.io.get_executor()));
    std::vector<std::string> seen;
    auto handler = [&](const letterbox::message& m) -> boost::asio::awaitable<void> {
        timer->expires_after(1s); // a slow call
        co_await timer->async_wait(boost::asio::use_awaitable);
        seen.push_back(m.body);
    };
    std::vector<letterbox::consumer_event::kind> events;
    letterbox::consumer_options options;
    options.consume.queue = "work";
    options.on_event = [&](const letterbox::consumer_event& e) {
        events.push_back(e.what);
    };
    letterbox::consumer c(w.transport, handler, w.clock, options);
    w.start(c);
    w.publish("work", "a");
    REQUIRE(w.drive_until([&] { return c.stats().delivered == 1; }));
    // The handler waits; the executor still publishes and confirms.
    w.publish("side", "b");
    CHECK(seen.empty());
    CHECK(c.stats().acked == 0);
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1 && w.held("work") == 0; }));
    CHECK(seen == std::vector<std::string>{"a"});
    using k = letterbox::consumer_event::kind;
    CHECK(events == std::vector<k>{k::delivered, k::handled, k::acked});
}

TEST_CASE("consumer: the layers wrap a coroutine handler, and every run of it is reported",
          "[consumer][async]") {
    sim_world w;
    w.declare("work");
    w.declare("work.dlq");
    int runs = 0;
    auto handler = [&](const letterbox::message&) -> boost::asio::awaitable<std::error_code> {
        ++runs;
        co_return errc::handler_failed;
    };
    auto pipeline = mw::compose(handler, mw::retry(letterbox::backoff::immediate(3)),
                                mw::dead_letter({}, w.clock));
    static_assert(letterbox::async_delivery_handler<decltype(pipeline)>);
    using k = letterbox::consumer_event::kind;
    std::vector<k> kinds;
    std::string dead_letter_reason; // an event's text lives during the call only
    letterbox::consumer_options options;
    options.consume.queue = "work";
    options.on_event = [&](const letterbox::consumer_event& e) {
        kinds.push_back(e.what);
        if (e.what == k::dead_lettered)
            dead_letter_reason = e.reason;
    };
    letterbox::consumer c(w.transport, pipeline, w.clock, options);
    w.start(c);
    w.publish("work", "poison");
    REQUIRE(w.drive_until([&] { return c.stats().dead_lettered == 1 && w.held("work") == 0; }));
    CHECK(runs == 3);
    CHECK(c.stats().retried == 2);
    CHECK(w.held("work.dlq") == 1);
    CHECK(kinds == std::vector<k>{k::delivered, k::handled, k::retried, k::handled, k::retried,
                                  k::handled, k::dead_lettered});
    CHECK(dead_letter_reason == "retries-exhausted");
}

TEST_CASE("consumer runs a handler that takes a completion token, and keeps the error code "
          "it completes with",
          "[consumer][async]") {
    sim_world w;
    w.declare("work.dlq");
    letterbox::topology::queue work;
    work.name = "work";
    letterbox::topology::queue_arguments arguments;
    arguments.dead_letter_exchange = "";
    arguments.dead_letter_routing_key = "work.dlq";
    work.arguments = arguments.to_table();
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_declare(work, h); }));
    auto timer = std::make_shared<decltype(w.clock.make_timer(w.io.get_executor()))>(
        w.clock.make_timer(w.io.get_executor()));
    int calls = 0;
    // An asynchronous operation: the timer's wait, cancelled on the second message.
    auto handler = [&](const letterbox::message& m, auto&& token) {
        ++calls;
        timer->expires_after(1s);
        if (m.body == "cancelled")
            boost::asio::post(w.io.get_executor(), [timer] { timer->cancel(); });
        return timer->async_wait(std::forward<decltype(token)>(token));
    };
    static_assert(letterbox::async_handler<decltype(handler)>);
    std::vector<std::string> failures;
    auto options = options_for("work", letterbox::failure_action::dead_letter);
    options.on_event = [&](const letterbox::consumer_event& e) {
        if (e.what == letterbox::consumer_event::kind::failed)
            failures.emplace_back(e.reason);
    };
    letterbox::consumer c(w.transport, handler, w.clock, options);
    w.start(c);
    w.publish("work", "fine");
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1; }));
    w.publish("work", "cancelled");
    REQUIRE(w.drive_until([&] { return c.stats().failed == 1 && w.held("work") == 0; }));
    CHECK(calls == 2);
    CHECK(w.held("work.dlq") == 1);
    // What the wait completed with: boost::asio::error::operation_aborted, thrown by
    // use_awaitable and kept as the failure's reason.
    REQUIRE(failures.size() == 1);
    CHECK_THAT(failures[0],
               Catch::Contains(
                   boost::system::error_code(boost::asio::error::operation_aborted).message()));
}

TEST_CASE("consumer runs a coroutine handler on its handler executor and settles on the "
          "transport's",
          "[consumer][async][threads]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    boost::asio::thread_pool pool(2);
    const auto io_thread = std::this_thread::get_id();
    std::atomic<int> on_pool{0}, handled{0};
    auto o = options_for("work", letterbox::failure_action::dead_letter);
    o.handler_executor = pool.get_executor();
    letterbox::consumer c(
        w.transport,
        [&](const letterbox::message& m) -> boost::asio::awaitable<std::error_code> {
            // Waits once (a hop through the pool), as a coroutine that calls a service would.
            co_await boost::asio::post(co_await boost::asio::this_coro::executor,
                                       boost::asio::use_awaitable);
            if (std::this_thread::get_id() != io_thread)
                on_pool.fetch_add(1);
            handled.fetch_add(1);
            co_return m.body == "poison" ? std::error_code(errc::payload_malformed)
                                         : std::error_code{};
        },
        o);
    w.start(c);
    for (auto body : {"a", "b", "poison", "c"})
        REQUIRE_FALSE(w.publish("work", body));
    REQUIRE(w.run_until([&] { return c.stats().acked == 3 && c.stats().failed == 1; }));
    CHECK(w.run_until([&] { return w.broker.queue("work")->unacked == 0; }));
    CHECK(handled.load() == 4);
    CHECK(on_pool.load() == 4);
    CHECK(w.broker.queue("work.dlq")->ready == 1);
    pool.join();
}

TEST_CASE("consumer runs a blocking handler on its handler executor, with the transport's "
          "executor free meanwhile",
          "[consumer][threads]") {
    world w;
    w.declare_queue_with_dead_letters("work");
    w.declare_queue_with_dead_letters("side");
    boost::asio::thread_pool pool(2);
    std::mutex m;
    std::condition_variable cv;
    int inside = 0;
    bool released = false;
    auto o = options_for("work", letterbox::failure_action::dead_letter);
    o.handler_executor = pool.get_executor();
    letterbox::consumer c(
        w.transport,
        [&](const letterbox::message&) {
            std::unique_lock lock(m);
            ++inside;
            cv.notify_all();
            // Blocks, as a slow call would, until the test releases it (bounded).
            if (!cv.wait_for(lock, 20s, [&] { return released; }))
                throw std::runtime_error("never released");
        },
        o);
    w.start(c);
    REQUIRE_FALSE(w.publish("work", "a"));
    REQUIRE_FALSE(w.publish("work", "b"));
    // Both handlers block at once, on the pool's two threads...
    REQUIRE(w.run_until([&] {
        std::lock_guard lock(m);
        return inside == 2;
    }));
    // ...while the io thread still carries out a publish and its confirm.
    CHECK_FALSE(w.publish("side", "c"));
    CHECK(c.stats().acked == 0);
    {
        std::lock_guard lock(m);
        released = true;
    }
    cv.notify_all();
    REQUIRE(w.run_until([&] { return c.stats().acked == 2; }));
    // The acks go out on the io thread, after the pool handed the outcomes back.
    CHECK(w.run_until([&] { return w.broker.queue("work")->unacked == 0; }));
    pool.join();
}

} // namespace unit_consumer
