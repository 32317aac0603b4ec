// SPDX-License-Identifier: BSL-1.0
//
// Example 01: topic routing and dead-lettering on the in-memory RabbitMQ model.
//
// Shows a topic exchange `orders` feeding the queues `inventory`, `billing` and `notifications`
// as in an order system, how `*` (exactly one word) and `#` (zero or more words) match, an
// unroutable publish coming back as `errc::no_route`, and a message that `billing` rejects
// being dead-lettered through its dead-letter exchange, with the `x-death` entry the broker
// writes. It runs on one thread and a virtual clock, so its output is always the same.
//
// Needs: the core only (in_memory::transport, C++20 coroutines on Boost.Asio).
// Run: `make demo`, or build/release/examples/example_01_topic_routing.
#include <letterbox/letterbox.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace letterbox;

struct route_check {
    std::string key;                 // routing key published to `orders`
    std::vector<std::string> queues; // where it must land, in declaration order
};

const std::vector<route_check> plan = {
    {"orders.created", {"inventory", "billing", "notifications"}},
    {"orders.shipped", {"notifications"}},
    {"orders.cancelled", {"notifications"}}, // only the `orders.#` queue
    {"orders.refund.requested", {"billing", "notifications"}},
    {"orders.refund", {"notifications"}}, // `orders.refund.*` needs one more word
    {"orders", {"notifications"}},        // `orders.#` matches zero words too
    {"payments.settled", {}},             // no binding: returned to the publisher
};

// The topology. Billing's failures go to its dead-letter exchange `orders.dlx`.
const std::vector<topology::exchange> exchanges = {
    {.name = "orders", .type = topology::exchange_type::topic},
    {.name = "orders.dlx", .type = topology::exchange_type::fanout},
};
const std::vector<topology::queue> queues = {
    {.name = "inventory"},
    {.name = "billing",
     .arguments = topology::queue_arguments{.dead_letter_exchange = "orders.dlx"}.to_table()},
    {.name = "notifications"},
    {.name = "billing.dead"},
};
const std::vector<topology::binding> bindings = {
    {"orders", "inventory", "orders.created"}, // reserve stock
    {"orders", "billing", "orders.created"},   // charge the customer
    {"orders", "billing", "orders.refund.*"},  // refund requested, approved, ...
    {"orders", "notifications", "orders.#"},   // tell the customer everything
    {"orders.dlx", "billing.dead", ""},        // fanout: the key is ignored
};

// GCC 12 misreports Asio's coroutine-frame allocation as mismatched new/delete (GCC bug 109224).
// Also for GCC 12: every argument of a `co_await`ed call below is a named variable, because
// GCC 12 mis-destroys class temporaries created inside a co_await expression.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
asio::awaitable<int> run(in_memory::broker& broker, in_memory::transport& t) {
    using asio::use_awaitable;
    for (const auto& x : exchanges)
        co_await t.async_declare(x, use_awaitable);
    for (const auto& q : queues)
        co_await t.async_declare(q, use_awaitable);
    for (const auto& b : bindings)
        co_await t.async_bind(b, use_awaitable);

    // Consumers record where each message landed. Billing refuses refund requests
    // (permanently: reject without requeue), which dead-letters them to `orders.dlx`.
    std::map<std::string, std::vector<std::string>> landed;
    std::optional<delivery> dead;
    int unsettled = 0; // acks and rejects that failed
    auto settled = [&unsettled](error_code ec) {
        unsettled += ec ? 1 : 0;
    };
    for (const auto& q : queues) {
        consume_options options{.queue = q.name};
        std::function<void(delivery)> on_delivery = [&, name = q.name](delivery d) {
            if (name == "billing.dead")
                dead = d;
            else
                landed[d.msg.routing_key].push_back(name);
            if (name == "billing" && d.msg.routing_key == "orders.refund.requested")
                t.async_reject(d, /*requeue=*/false, settled);
            else
                t.async_ack(d, settled);
        };
        co_await t.async_consume(options, std::move(on_delivery), use_awaitable);
    }

    int failures = 0;
    auto check = [&](bool ok, const char* what) {
        if (!ok) {
            std::fprintf(stderr, "MISMATCH: %s\n", what);
            ++failures;
        }
    };
    for (const auto& [key, expected] : plan) {
        message m;
        m.exchange = "orders";
        m.routing_key = key;
        m.body = R"({"order": 1042})";
        // Publishes are mandatory and confirmed: success, or `no_route` after a basic.return.
        // `as_tuple` hands the error code over instead of throwing it.
        auto [ec] = co_await t.async_publish(m, asio::as_tuple(use_awaitable));
        std::string where;
        for (const auto& q : landed[key])
            where += (where.empty() ? "" : ", ") + q;
        std::printf("%-24s -> %s\n", key.c_str(),
                    ec ? ("nowhere (" + ec.message() + ")").c_str() : where.c_str());
        check(landed[key] == expected, "routing");
        check(ec == (expected.empty() ? make_error_code(errc::no_route) : std::error_code{}),
              "publish result");
    }

    check(dead.has_value(), "a dead letter in billing.dead");
    if (!dead)
        co_return 1;
    std::printf("\nbilling rejected %s; the dead letter in billing.dead (via %s):\n",
                dead->msg.routing_key.c_str(), dead->msg.exchange.c_str());
    const auto* deaths = dead->msg.headers.find(headers::x_death);
    const auto* list = deaths ? deaths->get_if<field_array>() : nullptr;
    check(list && list->size() == 1, "one x-death entry");
    if (!list || list->empty())
        co_return 1;
    const auto& entry = *list->front().get_if<field_table>();
    for (const auto& [name, value] : entry) {
        nlohmann::json j;
        to_json(j, value);
        std::printf("  x-death[0].%-13s = %s\n", name.c_str(), j.dump().c_str());
    }
    for (auto name : {headers::x_first_death_queue, headers::x_first_death_reason,
                      headers::x_first_death_exchange})
        std::printf("  %-24s = %s\n", std::string(name).c_str(),
                    dead->msg.headers.get<std::string>(name).value_or("?").c_str());
    check(entry.get<std::string>("reason") == "rejected", "x-death reason");
    check(entry.get<std::string>("queue") == "billing", "x-death queue");
    check(entry.get<std::string>("exchange") == "orders", "x-death exchange");
    check(entry.find("count") && entry.find("count")->as_integer() == 1, "x-death count");
    check(broker.counters().dead_lettered_of(in_memory::dead_letter_reason::rejected) == 1,
          "counter");
    check(broker.total_ready() == 0 && broker.total_unacked() == 0, "every queue drained");
    check(unsettled == 0, "every ack and reject succeeded");

    // Durability: a restart keeps durable queues and their persistent messages, and nothing
    // else, as RabbitMQ does (tests/integration/amqp_recovery.cpp restarts a real one).
    topology::queue audit{.name = "audit"};                       // durable (the default)
    topology::queue scratch{.name = "scratch", .durable = false}; // transient
    co_await t.async_declare(audit, use_awaitable);
    co_await t.async_declare(scratch, use_awaitable);
    for (const auto& [queue, persistent] : std::vector<std::pair<std::string, bool>>{
             {"audit", true}, {"audit", false}, {"scratch", true}}) {
        message m;
        m.routing_key = queue; // the default exchange routes by queue name
        m.body = R"({"order": 1043})";
        m.properties.persistent = persistent;
        co_await t.async_publish(m, use_awaitable);
    }
    broker.restart();
    const auto kept = broker.queue("audit");
    std::printf("\nafter a broker restart: audit (durable) holds %zu of 2 messages (the "
                "persistent one); scratch (transient) %s\n",
                kept ? static_cast<std::size_t>(kept->ready) : 0,
                broker.queue("scratch") ? "is still there" : "is gone");
    check(kept && kept->ready == 1 && !broker.queue("scratch"), "durability across a restart");
    co_return failures == 0 ? 0 : 1;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

int main() {
    asio::io_context io;
    virtual_clock clock; // x-death times come from it: 2026-01-01T00:00:00Z
    in_memory::broker broker(io.get_executor(), clock);
    in_memory::transport transport(broker, "example-01");
    int status = 1;
    asio::co_spawn(io, run(broker, transport), [&](std::exception_ptr e, int result) {
        if (e)
            std::rethrow_exception(e);
        status = result;
    });
    io.run();
    return status;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   orders\.created +-> inventory, billing, notifications
//   orders\.shipped +-> notifications
//   orders\.cancelled +-> notifications
//   orders\.refund\.requested +-> billing, notifications
//   orders\.refund +-> notifications
//   orders +-> notifications
//   payments\.settled +-> nowhere \(no route
//   billing rejected orders\.refund\.requested; the dead letter in billing\.dead
//   \(via orders\.dlx\)
//   x-death\[0\]\.count += 1
//   x-death\[0\]\.exchange += "orders"
//   x-death\[0\]\.queue += "billing"
//   x-death\[0\]\.reason += "rejected"
//   x-death\[0\]\.routing-keys += \["orders\.refund\.requested"\]
//   x-death\[0\]\.time += {"\$timestamp":1767225600}
//   x-first-death-queue += billing
//   x-first-death-reason += rejected
//   x-first-death-exchange += orders
//   after a broker restart: audit \(durable\) holds 1 of 2 messages \(the persistent one\);
//   scratch \(transient\) is gone
