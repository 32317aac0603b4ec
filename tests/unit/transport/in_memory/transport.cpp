// SPDX-License-Identifier: BSL-1.0
// in_memory::transport: what is specific to the model. The transport contract itself is checked
// by the conformance suite (tests/conformance/in_memory_transport.cpp).

#include <letterbox/transport/in_memory/transport.hpp>

#include <letterbox/error.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/virtual_clock.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_transport_in_memory_transport {

static_assert(letterbox::transport<letterbox::in_memory::transport>);

namespace {

using namespace std::chrono_literals;
using letterbox::errc;

/// A broker on a single-threaded io_context, driven in bounded steps.
struct world {
    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};
    letterbox::virtual_clock clock;
    letterbox::in_memory::broker broker{io.get_executor(), clock};

    /// Runs handlers until `done()` holds or `timeout` passes; returns the last `done()`.
    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!done()) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline)
                return false;
            // In slices: a completion on another executor (use_future's) sets `done` without
            // waking this io_context.
            io.run_one_for(std::min<std::chrono::steady_clock::duration>(deadline - now, 10ms));
        }
        return true;
    }

    /// Runs every handler that is ready now, and those they post, without waiting.
    void settle() {
        while (io.poll() != 0) {
        }
    }

    std::error_code await(const std::function<void(std::function<void(std::error_code)>)>& op) {
        std::optional<std::error_code> result;
        op([&result](std::error_code ec) { result = ec; });
        if (!run_until([&] { return result.has_value(); }))
            return make_error_code(errc::timed_out);
        return *result;
    }
};

letterbox::message message_to(const std::string& queue, std::string body = "body") {
    letterbox::message m;
    m.id = letterbox::message_id_generator{}();
    m.routing_key = queue;
    m.body = std::move(body);
    return m;
}

letterbox::consume_options consume_from(std::string queue) {
    letterbox::consume_options o;
    o.queue = std::move(queue);
    return o;
}

std::error_code declare_queue(world& w, letterbox::in_memory::transport& t,
                              const std::string& name) {
    letterbox::topology::queue q;
    q.name = name;
    return w.await([&](auto done) { t.async_declare(q, done); });
}

} // namespace

TEST_CASE("in_memory::transport models transport", "[transport][in_memory]") {
    STATIC_REQUIRE(letterbox::transport<letterbox::in_memory::transport>);
}

TEST_CASE("a completion runs on the executor associated with its handler",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));

    boost::asio::io_context other;
    bool ran = false;
    bool on_other = false;
    t.async_publish(message_to("q"),
                    boost::asio::bind_executor(other.get_executor(), [&](std::error_code ec) {
                        ran = true;
                        on_other = other.get_executor().running_in_this_thread() && !ec;
                    }));
    REQUIRE(w.run_until([&] { return w.broker.queue("q")->ready == 1; }));
    w.settle();
    CHECK_FALSE(ran); // the broker's io_context does not run it
    CHECK(other.poll() == 1);
    CHECK(ran);
    CHECK(on_other);
}

TEST_CASE("a completion without an associated executor runs on the broker's executor",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    bool on_broker = false;
    std::optional<std::error_code> result;
    t.async_close([&](std::error_code ec) {
        on_broker = w.io.get_executor().running_in_this_thread();
        result = ec;
    });
    REQUIRE(w.run_until([&] { return result.has_value(); }));
    CHECK_FALSE(*result);
    CHECK(on_broker);
}

TEST_CASE("use_future and deferred completion tokens work", "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));

    SECTION("use_future") {
        std::future<void> f = t.async_publish(message_to("q"), boost::asio::use_future);
        REQUIRE(w.run_until([&] { return f.wait_for(0s) == std::future_status::ready; }));
        CHECK_NOTHROW(f.get());
        CHECK(w.broker.queue("q")->ready == 1);
    }
    SECTION("use_future throws the failure as boost::system::system_error") {
        std::future<void> f = t.async_publish(message_to("nowhere"), boost::asio::use_future);
        REQUIRE(w.run_until([&] { return f.wait_for(0s) == std::future_status::ready; }));
        try {
            f.get();
            FAIL("a publish that no queue takes must fail");
        } catch (const boost::system::system_error& e) {
            CHECK(e.code() == letterbox::errc::no_route);
        }
    }
    SECTION("deferred") {
        auto publish = t.async_publish(message_to("q"), boost::asio::deferred);
        w.settle();
        CHECK(w.broker.queue("q")->ready == 0); // nothing happens until it is launched
        std::optional<std::error_code> result;
        std::move(publish)([&](std::error_code ec) { result = ec; });
        REQUIRE(w.run_until([&] { return result.has_value(); }));
        CHECK_FALSE(*result);
        CHECK(w.broker.queue("q")->ready == 1);
    }
}

TEST_CASE("after broker.sever_all() the transport reconnects and re-creates its consumers",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    std::vector<letterbox::delivery> got;
    std::optional<std::error_code> consumed;
    std::string tag;
    t.async_consume(
        consume_from("q"), [&](letterbox::delivery d) { got.push_back(std::move(d)); },
        [&](std::error_code ec, std::string ctag) {
            consumed = ec;
            tag = std::move(ctag);
        });
    REQUIRE(w.run_until([&] { return consumed.has_value(); }));
    REQUIRE_FALSE(*consumed);
    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(message_to("q", "first"), done); }));
    REQUIRE(w.run_until([&] { return got.size() == 1; }));
    CHECK_FALSE(got[0].redelivered);

    w.broker.sever_all();
    CHECK(w.broker.connection_count() == 0);
    // The held delivery was requeued and comes back, marked, to the re-created consumer.
    REQUIRE(w.run_until([&] { return got.size() == 2; }));
    CHECK(w.broker.connection_count() == 1);
    CHECK(got[1].msg.body == "first");
    CHECK(got[1].redelivered);
    CHECK(got[1].consumer_tag == tag);
    CHECK(got[1].channel != got[0].channel);
    CHECK_FALSE(w.await([&](auto done) { t.async_ack(got[1], done); }));

    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(message_to("q", "second"), done); }));
    REQUIRE(w.run_until([&] { return got.size() == 3; }));
    CHECK(got[2].msg.body == "second");
    CHECK_FALSE(got[2].redelivered);
    CHECK_FALSE(w.await([&](auto done) { t.async_ack(got[2], done); }));
    w.settle();
    CHECK(w.broker.queue("q")->total() == 0);
}

TEST_CASE("settling a delivery from a lost channel fails with channel_closed",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    std::vector<letterbox::delivery> got;
    t.async_consume(
        consume_from("q"), [&](letterbox::delivery d) { got.push_back(std::move(d)); },
        [](std::error_code, std::string) {});
    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(message_to("q"), done); }));
    REQUIRE(w.run_until([&] { return got.size() == 1; }));
    const auto lost = got[0];
    w.broker.sever_all();
    REQUIRE(w.run_until([&] { return got.size() == 2; }));

    const std::error_code channel_closed = errc::channel_closed;
    CHECK(w.await([&](auto done) { t.async_ack(lost, done); }) == channel_closed);
    CHECK(w.await([&](auto done) { t.async_nack(lost, true, done); }) == channel_closed);
    CHECK(w.await([&](auto done) { t.async_reject(lost, false, done); }) == channel_closed);
    // The redelivery, on the new channel, settles.
    CHECK_FALSE(w.await([&](auto done) { t.async_ack(got[1], done); }));
}

TEST_CASE("operations after async_close fail with closed", "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    REQUIRE_FALSE(w.await([&](auto done) { t.async_close(done); }));

    const std::error_code closed = errc::closed;
    CHECK(w.await([&](auto done) { t.async_publish(message_to("q"), done); }) == closed);
    CHECK(declare_queue(w, t, "q2") == closed);
    std::optional<std::error_code> consumed;
    t.async_consume(
        consume_from("q"), [](letterbox::delivery) {},
        [&](std::error_code ec, std::string) { consumed = ec; });
    REQUIRE(w.run_until([&] { return consumed.has_value(); }));
    CHECK(*consumed == closed);
    CHECK(w.broker.queue("q")->ready == 0);
    CHECK(w.broker.connection_count() == 0);
}

TEST_CASE("a publish whose confirm is lost completes with outcome_unknown, and the next one "
          "succeeds",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    w.broker.lose_nth_confirm(1);
    const std::error_code outcome_unknown = errc::outcome_unknown;
    CHECK(w.await([&](auto done) { t.async_publish(message_to("q"), done); }) == outcome_unknown);
    CHECK_FALSE(w.await([&](auto done) { t.async_publish(message_to("q"), done); }));
    // The first one was stored even though its confirm was lost.
    CHECK(w.broker.queue("q")->ready == 2);
}

TEST_CASE("a publish the broker refuses completes with publish_nacked", "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    w.broker.nack_nth_publish(1);
    const std::error_code nacked = errc::publish_nacked;
    CHECK(w.await([&](auto done) { t.async_publish(message_to("q"), done); }) == nacked);
    CHECK(w.broker.queue("q")->ready == 0);
}

TEST_CASE(
    "async_publish copies an lvalue message and moves an rvalue one in, and both arrive whole",
    "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    // Bodies longer than std::string's small buffer: a moved-from one is left empty (libstdc++).
    const auto kept = message_to("q", std::string(300, 'k'));
    auto moved = message_to("q", std::string(300, 'm'));
    const auto moved_id = moved.id;
    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(kept, done); }));
    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(std::move(moved), done); }));
    CHECK(kept.body == std::string(300, 'k'));
    CHECK(moved.body.empty()); // NOLINT(bugprone-use-after-move): what the overload did with it
    std::vector<letterbox::message> got;
    for (int i = 0; i < 2; ++i) {
        std::optional<letterbox::delivery> d;
        REQUIRE_FALSE(w.await([&](auto done) {
            t.async_get("q", [&, done](std::error_code ec, std::optional<letterbox::delivery> r) {
                d = std::move(r);
                done(ec);
            });
        }));
        REQUIRE(d.has_value());
        got.push_back(d->msg);
    }
    CHECK(got[0].id == kept.id);
    CHECK(got[0].body == std::string(300, 'k'));
    CHECK(got[1].id == moved_id);
    CHECK(got[1].body == std::string(300, 'm'));
}

TEST_CASE("an operation started in a delivery handler runs after the handler returns",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(message_to("q"), done); }));
    std::size_t deliveries = 0;
    std::optional<std::size_t> unacked_after_ack_call;
    t.async_consume(
        consume_from("q"),
        [&](letterbox::delivery d) {
            ++deliveries;
            t.async_ack(d, [](std::error_code) {});
            unacked_after_ack_call = w.broker.queue("q")->unacked;
        },
        [](std::error_code, std::string) {});
    REQUIRE(w.run_until([&] { return w.broker.queue("q")->total() == 0; }));
    CHECK(deliveries == 1);
    REQUIRE(unacked_after_ack_call.has_value());
    CHECK(*unacked_after_ack_call == 1);
}

TEST_CASE("a consumer that always requeues is redelivered to one handler at a time, without "
          "blocking the executor",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(message_to("q"), done); }));
    std::size_t deliveries = 0;
    t.async_consume(
        consume_from("q"),
        [&](letterbox::delivery d) {
            ++deliveries;
            t.async_nack(d, true, [](std::error_code) {});
        },
        [](std::error_code, std::string) {});
    // Each redelivery is a separate handler: a bounded number of steps sees a bounded number.
    for (int i = 0; i < 50; ++i)
        w.io.run_one_for(1s);
    CHECK(deliveries >= 5);
    CHECK(deliveries <= 50);
    REQUIRE_FALSE(w.await([&](auto done) { t.async_close(done); }));
    w.settle();
    CHECK(w.broker.queue("q")->ready == 1);
}

TEST_CASE("a cancelled consumer's channel closes once its deliveries are settled",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    const auto idle = w.broker.channel_count(); // publishing + topology channels
    std::vector<letterbox::delivery> got;
    std::optional<std::error_code> consumed;
    std::string tag;
    t.async_consume(
        consume_from("q"), [&](letterbox::delivery d) { got.push_back(std::move(d)); },
        [&](std::error_code ec, std::string ctag) {
            consumed = ec;
            tag = std::move(ctag);
        });
    REQUIRE(w.run_until([&] { return consumed.has_value(); }));
    CHECK(w.broker.channel_count() == idle + 1);
    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(message_to("q"), done); }));
    REQUIRE(w.run_until([&] { return got.size() == 1; }));

    REQUIRE_FALSE(w.await([&](auto done) { t.async_cancel(tag, done); }));
    CHECK(w.broker.channel_count() == idle + 1); // still owes an ack
    CHECK_FALSE(w.await([&](auto done) { t.async_ack(got[0], done); }));
    CHECK(w.broker.channel_count() == idle);
    CHECK(w.broker.queue("q")->total() == 0);
}

TEST_CASE("a consumer whose queue is gone after a restart is dropped, not revived later",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    letterbox::topology::queue transient{.name = "transient", .durable = false};
    REQUIRE_FALSE(w.await([&](auto done) { t.async_declare(transient, done); }));
    int delivered = 0;
    std::optional<std::error_code> consumed;
    t.async_consume(
        consume_from("transient"), [&](letterbox::delivery) { ++delivered; },
        [&](std::error_code ec, std::string) { consumed = ec; });
    REQUIRE(w.run_until([&] { return consumed.has_value(); }));
    REQUIRE_FALSE(*consumed);

    w.broker.restart(); // the queue does not survive, so neither does the consumer
    REQUIRE(w.run_until([&] { return w.broker.connection_count() == 1; }));
    w.settle();
    CHECK_FALSE(w.broker.queue("transient").has_value());

    // Someone declares a queue of the same name later, and the connection drops again: the
    // dropped consumer must not come back and take its messages.
    REQUIRE_FALSE(w.await([&](auto done) { t.async_declare(transient, done); }));
    w.broker.sever_all();
    REQUIRE(w.run_until([&] { return w.broker.connection_count() == 1; }));
    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(message_to("transient"), done); }));
    w.settle();
    CHECK(delivered == 0);
    CHECK(w.broker.queue("transient")->consumers == 0);
    CHECK(w.broker.queue("transient")->ready == 1);
}

TEST_CASE("a consumer whose channel fails on an unknown delivery tag consumes again and gets its "
          "deliveries back",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    for (const char* body : {"m1", "m2"})
        REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(message_to("q", body), done); }));
    std::vector<letterbox::delivery> got;
    t.async_consume(
        consume_from("q"), [&got](letterbox::delivery d) { got.push_back(std::move(d)); },
        [](std::error_code, std::string) {});
    REQUIRE(w.run_until([&] { return got.size() == 2; }));

    // RabbitMQ closes the channel with 406 and requeues both; as amqp::transport does, the
    // settle reports it and the consumer goes on, on a new channel.
    auto unknown = got[1];
    unknown.delivery_tag += 100;
    CHECK(w.await([&](auto done) { t.async_ack(unknown, done); }) == errc::precondition_failed);
    REQUIRE(w.run_until([&] { return got.size() == 4; }));
    CHECK(got[2].msg.body == "m1");
    CHECK(got[3].msg.body == "m2");
    CHECK(got[2].redelivered);
    CHECK(got[3].redelivered);
    CHECK(w.await([&](auto done) { t.async_ack(got[0], done); }) == errc::channel_closed);
    CHECK_FALSE(w.await([&](auto done) { t.async_ack(got[2], done); }));
    CHECK_FALSE(w.await([&](auto done) { t.async_ack(got[3], done); }));
    w.settle();
    CHECK(w.broker.queue("q")->ready == 0);
    CHECK(w.broker.total_unacked() == 0);
}

TEST_CASE("settling after close completes with closed, like every other operation",
          "[transport][in_memory]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    REQUIRE_FALSE(declare_queue(w, t, "q"));
    REQUIRE_FALSE(w.await([&](auto done) { t.async_publish(message_to("q"), done); }));
    std::vector<letterbox::delivery> got;
    t.async_consume(
        consume_from("q"), [&got](letterbox::delivery d) { got.push_back(std::move(d)); },
        [](std::error_code, std::string) {});
    REQUIRE(w.run_until([&] { return got.size() == 1; }));
    REQUIRE_FALSE(w.await([&](auto done) { t.async_close(done); }));
    CHECK(w.await([&](auto done) { t.async_ack(got[0], done); }) == errc::closed);
    CHECK(w.await([&](auto done) { t.async_reject(got[0], true, done); }) == errc::closed);
}

} // namespace unit_transport_in_memory_transport
