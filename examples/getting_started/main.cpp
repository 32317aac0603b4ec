// SPDX-License-Identifier: BSL-1.0
//
// The getting-started project (docs/getting-started.md): a worker that consumes `orders` with
// the whole letterbox pipeline: immediate retry for a flaky dependency, delayed redelivery
// through the broker, a dead-letter queue for what can never succeed, and an SQLite inbox so a
// redelivered order never ships twice. On the in-memory RabbitMQ model, so it runs anywhere;
// the last section of the guide swaps in RabbitMQ.
//
// Built twice: in-tree as example_getting_started (its output is checked), and as a project of
// its own against the installed package by the install test.
//[includes
#include <letterbox/letterbox.hpp>
#include <letterbox/sqlite.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace asio = boost::asio;
namespace lb = letterbox;
using namespace std::chrono_literals;
//]

//[handler
// The message: its JSON is read and written by nlohmann's `from_json` / `to_json`, and it
// travels under the type name `order-placed`.
struct order {
    static constexpr std::string_view message_type = "order-placed";
    int id = 0;
    std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id, sku)

// The business effect, inside the inbox's transaction: it commits with the inbox record, or not
// at all. Throwing fails the attempt; what happens next is the pipeline's decision.
struct ship_order {
    int* flaky_calls;
    void operator()(const order& o, lb::sqlite::unit_of_work& uow) const {
        if (o.id == 2 && ++*flaky_calls == 1)
            throw std::runtime_error("warehouse API timed out"); // transient: retried
        std::error_code ec;
        auto st = uow.connection().prepare("INSERT INTO shipments(order_id) VALUES (?1)", ec);
        if (ec)
            throw lb::error(ec, "prepare");
        st->bind_int64(1, o.id);
        if (auto failed = st->execute())
            throw lb::error(failed, "insert shipment");
    }
};
//]

//[setup
int main() {
    // A directory of its own (two copies may run at once: the example and the install test).
    const auto dir = std::filesystem::temp_directory_path() /
                     ("letterbox-getting-started-" + lb::to_string(lb::message_id_generator{}()));
    std::filesystem::create_directories(dir);

    asio::io_context io;
    lb::in_memory::broker broker(io.get_executor()); // later: lb::amqp::transport
    lb::in_memory::transport transport(broker, "orders-worker");

    auto db = lb::sqlite::database::open((dir / "shipping.db").string());
    {
        auto uow = db.begin();
        if (auto ec = uow.connection().exec("CREATE TABLE shipments(order_id INTEGER PRIMARY KEY)"))
            throw lb::error(ec, "create the shipments table");
        if (auto ec = uow.commit())
            throw lb::error(ec, "commit the shipments table");
    }
    //]

    //[pipeline
    lb::sqlite::inbox_store inbox(db); // keeps its records 7 days, and purges older ones itself
    auto orders = lb::receive_endpoint(transport, {.queue = "orders", .consumer_id = "shipping"})
                      .retry(lb::backoff::immediate(2)) // 2 runs per delivery, in process
                      .redelivery(lb::backoff::exponential(1s, 10.0, 10s, 3)); // 1 s, then 10 s
    int flaky_calls = 0;
    auto worker = orders.consume(inbox, lb::typed<order>(ship_order{&flaky_calls}));
    //]

    //[run
    auto run = [&]() -> asio::awaitable<void> {
        // orders, orders.retry.1000ms, orders.retry.10000ms and orders.dlq
        co_await orders.async_declare(asio::use_awaitable);
        const std::string tag = co_await worker.async_start(asio::use_awaitable);

        lb::message_id_generator ids;
        const auto book = lb::make_message(ids, order{1, "book"}, "orders");
        const auto lamp = lb::make_message(ids, order{2, "lamp"}, "orders"); // fails once
        auto poison = lb::make_message(ids, order{3, ""}, "orders");
        poison.body = R"({"id": 3})"; // no sku: it never decodes, so it is dead-lettered
        // Each publish completes when the broker confirmed it, or throws. The lamp goes twice:
        // a duplicate delivery, for the inbox to absorb.
        const lb::message* published[] = {&book, &lamp, &poison, &lamp};
        for (const lb::message* m : published)
            co_await transport.async_publish(*m, asio::use_awaitable);

        co_await worker.async_wait_idle(asio::use_awaitable); // all handled and settled
        co_await worker.async_shutdown(tag, asio::use_awaitable);
    };
    asio::co_spawn(io, run, [](std::exception_ptr e) {
        if (e)
            std::rethrow_exception(e); // out of io.run()
    });
    io.run();
    //]

    //[check
    auto count = [&](const char* sql) {
        auto uow = db.begin();
        std::error_code ec;
        auto st = uow.connection().prepare(sql, ec);
        return !ec && st->step(ec) ? st->column_int64(0) : -1;
    };
    const auto dlq = broker.queue("orders.dlq");
    const auto stats = worker.stats();
    std::printf("deliveries: %llu, acked: %llu, dead-lettered: %llu\n",
                static_cast<unsigned long long>(stats.delivered),
                static_cast<unsigned long long>(stats.acked),
                static_cast<unsigned long long>(stats.dead_lettered));
    std::printf("shipments: %lld (orders 1 and 2, once each); duplicates absorbed: %llu\n",
                static_cast<long long>(count("SELECT COUNT(*) FROM shipments")),
                static_cast<unsigned long long>(
                    lb::middleware::innermost(worker.handler()).stats().duplicates));
    std::printf("in orders.dlq: %zu\n", dlq ? static_cast<std::size_t>(dlq->ready) : 0);
    std::filesystem::remove_all(dir);
    const bool ok = count("SELECT COUNT(*) FROM shipments") == 2 && dlq && dlq->ready == 1;
    return ok ? 0 : 1;
}
//]

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   deliveries: 4, acked: 3, dead-lettered: 1
//   shipments: 2 \(orders 1 and 2, once each\); duplicates absorbed: 1
//   in orders\.dlq: 1
