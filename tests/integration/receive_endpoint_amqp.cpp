// SPDX-License-Identifier: BSL-1.0

// A receive endpoint on a real RabbitMQ, in the coroutine style of the getting-started page:
// the topology it derives is declared on the broker, a flaky message is retried in process, a
// poison one is dead-lettered with its reason, a duplicate is absorbed by the inbox, and the
// consumer waits until idle, then shuts down gracefully.

#include <letterbox/receive_endpoint.hpp>

#include <letterbox/amqp/transport.hpp>
#include <letterbox/backoff/fixed.hpp>
#include <letterbox/backoff/immediate.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/innermost.hpp>
#include <letterbox/payload.hpp>
#include <letterbox/typed_handler.hpp>

#include "amqp_broker.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace integration_receive_endpoint_amqp {

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace lb = letterbox;

struct order {
    static constexpr std::string_view message_type = "order-placed";
    int id = 0;
    std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id, sku)

} // namespace

TEST_CASE("amqp: a receive endpoint retries, dead-letters and deduplicates on RabbitMQ, then "
          "waits until idle and shuts down",
          "[.integration][amqp][receive_endpoint]") {
    amqp_test::amqp_transport_fixture f;
    auto transport = f.make();
    const std::string queue = f.unique_name("endpoint");
    lb::in_memory_inbox_store inbox;
    const auto orders = lb::receive_endpoint(transport, {.queue = queue, .consumer_id = "shipping"})
                            .retry(lb::backoff::immediate(2))
                            .redelivery(lb::backoff::fixed(200ms, 2));
    std::vector<int> shipped;
    int lamp_runs = 0;
    auto worker =
        orders.consume(inbox, lb::typed<order>([&](const order& o, lb::in_memory_unit_of_work& u) {
                           if (o.id == 2 && ++lamp_runs == 1)
                               throw std::runtime_error("warehouse API timed out");
                           return u.on_commit([&shipped, id = o.id] { shipped.push_back(id); });
                       }));

    std::optional<std::exception_ptr> outcome;
    std::uint32_t left_in_queue = 1;
    auto run = [&]() -> asio::awaitable<void> {
        co_await orders.async_declare(asio::use_awaitable);
        const std::string tag = co_await worker.async_start(asio::use_awaitable);
        lb::message_id_generator ids;
        const auto book = lb::make_message(ids, order{1, "book"}, queue);
        const auto lamp = lb::make_message(ids, order{2, "lamp"}, queue);
        auto poison = lb::make_message(ids, order{3, ""}, queue);
        poison.body = R"({"id": 3})";
        const lb::message* published[] = {&book, &lamp, &poison, &lamp};
        for (const lb::message* m : published)
            co_await transport.async_publish(*m, asio::use_awaitable);
        co_await worker.async_wait_idle(asio::use_awaitable);
        left_in_queue = co_await transport.async_queue_depth(queue, asio::use_awaitable);
        co_await worker.async_shutdown(tag, asio::use_awaitable);
    };
    asio::co_spawn(f.io(), run, [&](std::exception_ptr e) { outcome = e; });
    REQUIRE(f.run_until([&] { return outcome.has_value(); }, 30s));
    if (*outcome)
        std::rethrow_exception(*outcome);

    CHECK(shipped == std::vector<int>{1, 2});
    CHECK(left_in_queue == 0);
    const auto stats = worker.stats();
    CHECK(stats.delivered == 4);
    CHECK(stats.acked == 3);
    CHECK(stats.dead_lettered == 1);
    CHECK(stats.retried == 1);
    CHECK(lb::middleware::innermost(worker.handler()).stats().duplicates == 1);

    // The poison message is in <queue>.dlq, with the reason and the consumer id.
    std::optional<std::optional<lb::delivery>> dead;
    transport.async_get(queue + ".dlq", [&](lb::error_code ec, std::optional<lb::delivery> d) {
        CHECK_FALSE(ec);
        dead = std::move(d);
    });
    REQUIRE(f.run_until([&] { return dead.has_value(); }, 20s));
    REQUIRE(dead->has_value());
    const auto& headers = (*dead)->msg.headers;
    CHECK(headers.get<std::string>(lb::headers::death_reason) == std::string("permanent-failure"));
    CHECK(headers.get<std::string>(lb::headers::consumer_id) == std::string("shipping"));
    CHECK((*dead)->msg.type == "order-placed");
}

} // namespace integration_receive_endpoint_amqp
