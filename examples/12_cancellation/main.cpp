// SPDX-License-Identifier: BSL-1.0
//
// Example 12: cancelling operations the Asio way (docs/cancellation.md).
//
// 1. A shutdown signal: the outbox relay runs with a cancellation slot bound to its token. The
//    signal stops it gracefully, as `stop()` would: what was claimed is published and marked,
//    and `async_run` completes with `operation_canceled`. A row added afterwards stays pending
//    for the next relay.
// 2. A deadline: during a broker outage, a coroutine waits for the broker with `||` against a
//    30-second timer. The timer wins; `||` cancels the wait, which completes at once. Waiting
//    again without a deadline, the broker comes back and the wait succeeds.
//
// Needs: the core only. Runs on one thread, in virtual time (a `virtual_clock`): the output is
// always the same.
// Run: build/<dir>/examples/example_12_cancellation.
#include <letterbox/letterbox.hpp>
#include <letterbox/outbox/outbox_relay.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <variant>

namespace asio = boost::asio;
using namespace letterbox;
using namespace std::chrono_literals;
using relay_type = outbox_relay<in_memory_outbox_store, in_memory::transport, virtual_clock>;

int failures = 0;
void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what);
        ++failures;
    }
}

// Runs ready handlers, and moves virtual time to the next timer when none is ready, until
// `done()` holds (bounded).
bool drive_until(asio::io_context& io, virtual_clock& clock, const std::function<bool()>& done) {
    for (int step = 0; step < 1'000'000; ++step) {
        if (done())
            return true;
        io.restart();
        if (io.poll_one() == 0 && !clock.advance_to_next())
            return done();
    }
    return done();
}

std::error_code add_order_event(in_memory_outbox_store& outbox, message_id_generator& ids,
                                int order, store_time now) {
    in_memory_unit_of_work uow;
    outbox_entry e;
    e.msg.id = ids();
    e.msg.type = "order.placed";
    e.msg.exchange = "orders";
    e.msg.routing_key = "order.placed";
    e.msg.body = "order " + std::to_string(order);
    e.aggregate_type = "order";
    e.aggregate_id = std::to_string(order);
    if (auto ec = outbox.add(uow, e, now))
        return ec;
    return uow.commit();
}

std::size_t count(in_memory_outbox_store& outbox, outbox_status status) {
    std::error_code ec;
    outbox_query q;
    q.status = status;
    q.limit = 1000;
    return outbox.list(q, ec).size();
}

int main() {
    asio::io_context io;
    virtual_clock clock;
    in_memory::broker broker(io.get_executor(), clock);
    in_memory::transport transport(broker, "orders-service");
    in_memory_outbox_store outbox;
    message_id_generator ids(12);

    {
        auto setup = broker.connect("setup");
        auto ch = setup.open_channel();
        topology::exchange x;
        x.name = "orders";
        x.type = topology::exchange_type::topic;
        topology::queue q;
        q.name = "shipping";
        check(!ch.exchange_declare(x) && !ch.queue_declare(q) &&
                  !ch.queue_bind("shipping", "orders", "order.#"),
              "topology");
        setup.close();
    }

    // -- 1. a shutdown signal stops the relay gracefully -------------------------------------
    for (int order = 1; order <= 3; ++order)
        check(!add_order_event(outbox, ids, order, clock.wall_now()), "add");
    //[relay_cancellation_slot
    relay_type relay(outbox, transport, clock);
    asio::cancellation_signal shutdown;
    std::optional<std::error_code> relay_result;
    relay.async_run(asio::bind_cancellation_slot(shutdown.slot(),
                                                 [&](std::error_code ec) { relay_result = ec; }));
    check(drive_until(io, clock, [&] { return count(outbox, outbox_status::published) == 3; }),
          "the relay publishes the three events");
    shutdown.emit(asio::cancellation_type::terminal);
    //]
    check(drive_until(io, clock, [&] { return relay_result.has_value(); }), "the relay stops");
    std::printf("relay: published %zu events, then async_run completed: %s\n",
                count(outbox, outbox_status::published), relay_result->message().c_str());
    check(*relay_result == std::errc::operation_canceled, "operation_canceled");
    check(!add_order_event(outbox, ids, 4, clock.wall_now()), "add after the stop");
    drive_until(io, clock, [&] { return clock.next_deadline() == std::nullopt; });
    std::printf("a row added after the stop: %zu pending, for the next relay\n",
                count(outbox, outbox_status::pending));
    check(count(outbox, outbox_status::pending) == 1, "one pending");
    check(broker.queue("shipping")->ready == 3, "three in shipping");

    // -- 2. a deadline on waiting for the broker ----------------------------------------------
    broker.go_down();
    std::optional<std::string> first, second;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            using namespace asio::experimental::awaitable_operators;
            auto deadline = clock.make_timer(co_await asio::this_coro::executor);
            deadline.expires_after(30s);
            const auto start = clock.now();
            auto winner = co_await (broker.async_wait_up(asio::use_awaitable) ||
                                    deadline.async_wait(asio::use_awaitable));
            const auto waited =
                std::chrono::duration_cast<std::chrono::seconds>(clock.now() - start);
            first = winner.index() == 1 ? "deadline after " + std::to_string(waited.count()) +
                                              " s: the wait for the broker was cancelled"
                                        : "the broker came back first";
            // Waiting again, without a deadline: the broker comes back below.
            co_await broker.async_wait_up(asio::use_awaitable); // throws if it fails
            second = "the broker is up again";
        },
        asio::detached);
    check(drive_until(io, clock, [&] { return first.has_value(); }), "the deadline fires");
    std::printf("%s\n", first->c_str());
    check(!second.has_value(), "still waiting while the broker is down");
    broker.come_back();
    check(drive_until(io, clock, [&] { return second.has_value(); }), "the second wait ends");
    std::printf("%s\n", second->c_str());

    std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   relay: published 3 events, then async_run completed: Operation canceled
//   a row added after the stop: 1 pending, for the next relay
//   deadline after 30 s: the wait for the broker was cancelled
//   the broker is up again
//   OK
