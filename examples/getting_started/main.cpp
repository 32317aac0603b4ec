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

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

using namespace std::chrono_literals;
namespace lb = letterbox;
//]

//[handler
// The payload, decoded from the message's JSON body by its nlohmann `from_json`.
struct order {
    int id = 0;
    std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id, sku)

// The business effect, inside the inbox's transaction: it commits with the inbox record, or not
// at all. Throwing fails the attempt; what happens next is the pipeline's decision.
struct ship_order {
    int* flaky_calls;
    void operator()(const lb::message& m, lb::sqlite::unit_of_work& uow) const {
        // No `sku`: a payload error, permanent (dead-lettered, never retried).
        const auto o = lb::decode_payload<order>(m);
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

int main() {
    //[setup
    // A directory of its own (two copies may run at once: the example and the install test).
    const auto dir = std::filesystem::temp_directory_path() /
                     ("letterbox-getting-started-" + lb::to_string(lb::message_id_generator{}()));
    std::filesystem::create_directories(dir);

    boost::asio::io_context io;
    lb::steady_clock clock;
    lb::in_memory::broker broker(io.get_executor()); // later: lb::amqp::transport
    lb::in_memory::transport transport(broker, "orders-worker");

    // orders, its retry queues (TTL queues that dead-letter back) and orders.dlq.
    const lb::topology::retry_topology topology{.queue = "orders", .delays = {1s, 10s}};

    auto db = lb::sqlite::database::open((dir / "shipping.db").string());
    {
        auto uow = db.begin();
        if (auto ec = uow.connection().exec("CREATE TABLE shipments(order_id INTEGER PRIMARY KEY)"))
            throw lb::error(ec, "create the shipments table");
        if (auto ec = uow.commit())
            throw lb::error(ec, "commit the shipments table");
    }
    lb::sqlite::inbox_store inbox(db);
    //]

    //[pipeline
    int flaky_calls = 0;
    auto shipping = lb::idempotent(
        ship_order{&flaky_calls}, inbox, [&] { return db.begin(); }, "shipping", clock);
    auto pipeline = lb::middleware::compose(
        shipping, // innermost: the effect and the inbox record in one SQLite transaction
        lb::middleware::dead_letter({.consumer_id = "shipping"}, clock),
        lb::middleware::redelivery(lb::backoff::exponential(1s, 10.0, 10s, 3), topology, clock),
        lb::middleware::retry(lb::backoff::immediate(2)));
    lb::consumer worker(transport, pipeline, clock, {.consume = {.queue = "orders"}});
    //]

    //[publish
    lb::message_id_generator ids;
    auto confirmed = [](lb::error_code ec) { // the broker confirmed and routed it, or it throws
        if (ec)
            throw lb::error(ec, "publish");
    };
    auto publish = [&](std::string body) {
        lb::message m;
        m.id = ids();
        m.routing_key = "orders";
        m.body = std::move(body);
        m.properties.content_type = "application/json";
        transport.async_publish(m, confirmed);
        return m;
    };
    // Declare the queues, start consuming, then publish three orders (and one of them twice).
    lb::topology::async_declare_all(transport, topology.queues(), [&](std::error_code ec) {
        if (ec)
            throw lb::error(ec, "declare");
        worker.async_start([&](std::error_code ec, std::string) {
            if (ec)
                throw lb::error(ec, "consume");
            publish(R"({"id": 1, "sku": "book"})");
            const auto lamp = publish(R"({"id": 2, "sku": "lamp"})"); // fails once, then ships
            publish(R"({"id": 3})");                                  // poison: no sku
            transport.async_publish(lamp, confirmed);                 // a duplicate delivery
        });
    });
    io.run_for(500ms);
    //]

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
                static_cast<unsigned long long>(shipping.stats().duplicates));
    std::printf("in orders.dlq: %zu\n", dlq ? static_cast<std::size_t>(dlq->ready) : 0);
    std::filesystem::remove_all(dir);
    const bool ok = count("SELECT COUNT(*) FROM shipments") == 2 && dlq && dlq->ready == 1;
    return ok ? 0 : 1;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   deliveries: 4, acked: 3, dead-lettered: 1
//   shipments: 2 \(orders 1 and 2, once each\); duplicates absorbed: 1
//   in orders\.dlq: 1
