// SPDX-License-Identifier: BSL-1.0
// Per-operation cancellation of in_memory::transport and the broker (detail/async_op.hpp): every
// operation cancelled before it starts completes with operation_canceled and has no effect; a
// wait for the broker cancels while it waits; parallel_group cancels the loser.
#include <letterbox/transport/in_memory/transport.hpp>

#include <letterbox/error.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/virtual_clock.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <system_error>

namespace unit_transport_in_memory_cancellation {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;

bool canceled(std::error_code ec) {
    return ec == std::errc::operation_canceled;
}

struct world {
    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    letterbox::in_memory::broker broker{io.get_executor(), clock};
    letterbox::in_memory::transport t{broker};

    world() {
        settle();
        letterbox::topology::queue q;
        q.name = "q";
        REQUIRE_FALSE(await([&](auto done) { t.async_declare(q, done); }));
    }

    /// Runs every handler that is ready now, and those they post (bounded).
    void settle() {
        io.restart();
        for (int i = 0; i < 100'000 && io.poll_one() != 0; ++i) {
        }
    }

    std::error_code await(const std::function<void(std::function<void(std::error_code)>)>& op) {
        std::optional<std::error_code> result;
        op([&result](std::error_code ec) { result = ec; });
        settle();
        return result ? *result : make_error_code(errc::timed_out);
    }

    std::size_t ready(const std::string& queue) {
        auto info = broker.queue(queue);
        return info ? info->ready : 0;
    }

    void publish_one(const std::string& body = "body") {
        REQUIRE_FALSE(await([&](auto done) { t.async_publish(message_to("q", body), done); }));
    }

    static letterbox::message message_to(const std::string& queue, std::string body = "body") {
        letterbox::message m;
        m.id = letterbox::message_id_generator{}();
        m.routing_key = queue;
        m.body = std::move(body);
        return m;
    }
};

/// Starts `initiate(token)` with a cancellation slot, emits a terminal cancellation at once (the
/// operation has not started on the broker's executor yet), and returns its error code.
template <class Initiate>
std::error_code cancelled_at_once(world& w, Initiate initiate) {
    boost::asio::cancellation_signal signal;
    std::optional<std::error_code> result;
    int calls = 0;
    initiate(boost::asio::bind_cancellation_slot(signal.slot(), [&](std::error_code ec, auto...) {
        ++calls;
        result = ec;
    }));
    signal.emit(boost::asio::cancellation_type::terminal);
    w.settle();
    CHECK(calls == 1);
    CHECK_FALSE(signal.slot().has_handler());
    return result ? *result : make_error_code(errc::timed_out);
}

} // namespace

TEST_CASE("a publish cancelled before it starts publishes nothing",
          "[transport][in_memory][cancellation]") {
    world w;
    CHECK(canceled(cancelled_at_once(
        w, [&](auto token) { w.t.async_publish(world::message_to("q"), token); })));
    CHECK(w.ready("q") == 0);
    w.publish_one(); // the transport is unharmed
    CHECK(w.ready("q") == 1);
}

TEST_CASE("a get cancelled before it starts takes nothing",
          "[transport][in_memory][cancellation]") {
    world w;
    w.publish_one();
    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_get("q", token); })));
    CHECK(w.ready("q") == 1);
    CHECK(w.broker.queue("q")->unacked == 0);
}

TEST_CASE("a consume cancelled before it starts subscribes nothing",
          "[transport][in_memory][cancellation]") {
    world w;
    w.publish_one();
    int deliveries = 0;
    letterbox::consume_options o;
    o.queue = "q";
    CHECK(canceled(cancelled_at_once(w, [&](auto token) {
        w.t.async_consume(
            o, [&](letterbox::delivery) { ++deliveries; }, token);
    })));
    CHECK(deliveries == 0);
    CHECK(w.ready("q") == 1);
    CHECK(w.broker.queue("q")->consumers == 0);
}

TEST_CASE("topology operations cancelled before they start change nothing",
          "[transport][in_memory][cancellation]") {
    world w;
    letterbox::topology::queue q2;
    q2.name = "q2";
    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_declare(q2, token); })));
    CHECK_FALSE(w.broker.queue("q2"));

    letterbox::topology::exchange x;
    x.name = "x";
    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_declare(x, token); })));
    letterbox::topology::binding b;
    b.source = "x";
    b.destination = "q";
    b.routing_key = "k";
    // The exchange was not declared, so a bind that ran would fail with not_found: a
    // cancelled one reports only its cancellation.
    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_bind(b, token); })));

    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_queue_depth("q", token); })));
}

TEST_CASE("settlements cancelled before they start settle nothing",
          "[transport][in_memory][cancellation]") {
    world w;
    w.publish_one();
    std::optional<letterbox::delivery> d;
    w.t.async_get("q", [&](std::error_code ec, std::optional<letterbox::delivery> got) {
        REQUIRE_FALSE(ec);
        d = std::move(got);
    });
    w.settle();
    REQUIRE(d);
    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_ack(*d, token); })));
    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_nack(*d, true, token); })));
    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_reject(*d, false, token); })));
    CHECK(w.broker.queue("q")->unacked == 1); // still held: none of them ran
    REQUIRE_FALSE(w.await([&](auto done) { w.t.async_ack(*d, done); }));
    CHECK(w.broker.queue("q")->unacked == 0);
}

TEST_CASE("a consumer cancel and a close cancelled before they start do nothing",
          "[transport][in_memory][cancellation]") {
    world w;
    std::string tag;
    letterbox::consume_options o;
    o.queue = "q";
    w.t.async_consume(
        o, [](letterbox::delivery) {},
        [&](std::error_code ec, std::string t) {
            REQUIRE_FALSE(ec);
            tag = std::move(t);
        });
    w.settle();
    REQUIRE_FALSE(tag.empty());
    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_cancel(tag, token); })));
    CHECK(w.broker.queue("q")->consumers == 1);
    CHECK(canceled(cancelled_at_once(w, [&](auto token) { w.t.async_close(token); })));
    CHECK(w.t.is_connected());
}

TEST_CASE("parallel_group cancels the slower of two gets", "[transport][in_memory][cancellation]") {
    world w;
    w.publish_one("only");
    std::optional<std::array<std::size_t, 2>> order;
    std::error_code first_ec, second_ec;
    std::optional<letterbox::delivery> first_d, second_d;
    boost::asio::experimental::make_parallel_group(
        [&](auto token) { return w.t.async_get("q", token); },
        [&](auto token) { return w.t.async_get("q", token); })
        .async_wait(boost::asio::experimental::wait_for_one(),
                    [&](std::array<std::size_t, 2> o, std::error_code e1,
                        std::optional<letterbox::delivery> d1, std::error_code e2,
                        std::optional<letterbox::delivery> d2) {
                        order = o;
                        first_ec = e1;
                        first_d = std::move(d1);
                        second_ec = e2;
                        second_d = std::move(d2);
                    });
    w.settle();
    REQUIRE(order);
    // Both started on the broker's executor before the first completion was seen, so both ran:
    // the first took the message, the second found the queue empty. Nothing was lost.
    CHECK((*order)[0] == 0);
    CHECK_FALSE(first_ec);
    REQUIRE(first_d);
    CHECK(first_d->msg.body == "only");
    CHECK_FALSE(second_d);
}

TEST_CASE("a wait for the broker cancels while it waits", "[transport][in_memory][cancellation]") {
    world w;
    const auto type =
        GENERATE(boost::asio::cancellation_type::terminal, boost::asio::cancellation_type::partial,
                 boost::asio::cancellation_type::total);
    w.broker.go_down();
    boost::asio::cancellation_signal signal;
    std::optional<std::error_code> result;
    w.broker.async_wait_up(boost::asio::bind_cancellation_slot(
        signal.slot(), [&](std::error_code ec) { result = ec; }));
    w.settle();
    CHECK_FALSE(result); // waiting: the broker is down
    signal.emit(type);
    w.settle();
    REQUIRE(result);
    CHECK(canceled(*result));
    w.broker.come_back();
    w.settle();
    CHECK(canceled(*result)); // completed once
}

} // namespace unit_transport_in_memory_cancellation
