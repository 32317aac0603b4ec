// SPDX-License-Identifier: BSL-1.0
// http_server over amqp::transport on a real RabbitMQ (LETTERBOX_AMQP_URL): readiness follows the
// connection, and a dead-letter queue the broker filled is listed and replayed over HTTP.

#include <letterbox/ops/http_server.hpp>

#include <letterbox/amqp/transport.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/message.hpp>
#include <letterbox/ops/connection_check.hpp>
#include <letterbox/ops/http_server_options.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include "amqp_broker.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <system_error>

namespace integration_ops_http_amqp {

namespace {

namespace http = boost::beast::http;
using namespace std::chrono_literals;

static_assert(letterbox::ops::connection_state_reporter<letterbox::amqp::transport>);

constexpr const char* token = "integration-token";

} // namespace

TEST_CASE("ops http over amqp: readiness follows the connection, and a DLQ is listed and replayed",
          "[.integration][amqp][ops]") {
    amqp_test::amqp_transport_fixture fx;
    auto t = fx.make();
    const auto x = fx.unique_name("ops.x");
    const auto q = fx.unique_name("ops.q");
    const auto dlq = fx.unique_name("ops.dlq");

    letterbox::topology::queue_arguments expiring;
    expiring.expires = std::chrono::minutes{10};
    letterbox::topology::exchange ex;
    ex.name = x;
    ex.type = letterbox::topology::exchange_type::direct;
    ex.durable = false;
    ex.auto_delete = true;
    REQUIRE_FALSE(amqp_test::await(fx, [&](auto h) { t.async_declare(ex, h); }));
    letterbox::topology::queue dq;
    dq.name = dlq;
    dq.arguments = expiring.to_table();
    REQUIRE_FALSE(amqp_test::await(fx, [&](auto h) { t.async_declare(dq, h); }));
    letterbox::topology::queue wq;
    wq.name = q;
    auto args = expiring;
    args.dead_letter_exchange = "";
    args.dead_letter_routing_key = dlq;
    wq.arguments = args.to_table();
    REQUIRE_FALSE(amqp_test::await(fx, [&](auto h) { t.async_declare(wq, h); }));
    letterbox::topology::binding b;
    b.source = x;
    b.destination = q;
    b.routing_key = "job";
    REQUIRE_FALSE(amqp_test::await(fx, [&](auto h) { t.async_bind(b, h); }));
    REQUIRE(t.is_connected());

    // Two messages, rejected by a consumer: the broker dead-letters them with x-death.
    letterbox::message_id_generator ids{99};
    for (int i = 0; i < 2; ++i) {
        letterbox::message m;
        m.id = ids();
        m.type = "order.placed";
        m.exchange = x;
        m.routing_key = "job";
        m.body = R"({"order":)" + std::to_string(i) + "}";
        m.properties.content_type = "application/json";
        REQUIRE_FALSE(amqp_test::await(fx, [&](auto h) { t.async_publish(m, h); }));
        std::optional<std::pair<std::error_code, std::optional<letterbox::delivery>>> got;
        for (int attempt = 0; attempt < 50 && !(got && got->second); ++attempt) {
            got.reset();
            t.async_get(q, [&](std::error_code ec, std::optional<letterbox::delivery> d) {
                got.emplace(ec, std::move(d));
            });
            REQUIRE(fx.run_until([&] { return got.has_value(); }, 20s));
            REQUIRE_FALSE(got->first);
        }
        REQUIRE(got->second.has_value());
        REQUIRE_FALSE(
            amqp_test::await(fx, [&](auto h) { t.async_reject(*got->second, false, h); }));
    }

    letterbox::ops::http_server_options o;
    o.port = 0;
    o.token = token;
    letterbox::ops::http_server server(fx.io().get_executor(), o);
    server.add_dead_letter_queue(t, dlq);
    server.add_readiness_check("transport", letterbox::ops::connection_check(t));
    REQUIRE_FALSE(server.listen());

    boost::beast::tcp_stream stream(fx.io());
    std::optional<boost::system::error_code> connected;
    stream.async_connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                                        server.local_endpoint().port()),
                         [&](boost::system::error_code ec) { connected = ec; });
    REQUIRE(fx.run_until([&] { return connected.has_value(); }, 10s));
    REQUIRE_FALSE(*connected);
    boost::beast::flat_buffer buffer;
    const auto call = [&](http::verb method, const std::string& target, std::string body) {
        http::request<http::string_body> req{method, target, 11};
        req.set(http::field::host, "127.0.0.1");
        req.set(http::field::authorization, std::string("Bearer ") + token);
        req.body() = std::move(body);
        req.prepare_payload();
        std::optional<boost::system::error_code> done;
        http::async_write(stream, req,
                          [&](boost::system::error_code ec, std::size_t) { done = ec; });
        REQUIRE(fx.run_until([&] { return done.has_value(); }, 10s));
        REQUIRE_FALSE(*done);
        http::response<http::string_body> res;
        done.reset();
        http::async_read(stream, buffer, res,
                         [&](boost::system::error_code ec, std::size_t) { done = ec; });
        REQUIRE(fx.run_until([&] { return done.has_value(); }, 30s));
        REQUIRE_FALSE(*done);
        return res;
    };

    auto ready = call(http::verb::get, "/health/ready", "");
    CHECK(ready.result_int() == 200);

    // The depth a passive declare reports can lag the reject by a moment.
    nlohmann::json queues;
    for (int attempt = 0; attempt < 100; ++attempt) {
        queues = nlohmann::json::parse(call(http::verb::get, "/queues", "").body());
        if (queues["queues"][0]["depth"] == 2)
            break;
        std::optional<bool> tick;
        boost::asio::steady_timer pause(fx.io(), 50ms);
        pause.async_wait([&](boost::system::error_code) { tick = true; });
        REQUIRE(fx.run_until([&] { return tick.has_value(); }, 5s));
    }
    CHECK(queues["queues"][0]["depth"] == 2);

    auto listed = call(http::verb::get, "/dlq/" + dlq, "");
    REQUIRE(listed.result_int() == 200);
    const auto entries = nlohmann::json::parse(listed.body())["entries"];
    REQUIRE(entries.size() == 2);
    CHECK(entries[0]["reason"] == "rejected");
    CHECK(entries[0]["original_queue"] == q);

    auto replayed = call(http::verb::post, "/dlq/" + dlq + "/replay?all=true", "");
    REQUIRE(replayed.result_int() == 200);
    const auto r = nlohmann::json::parse(replayed.body());
    CHECK(r["replayed"] == 2);
    CHECK(r["failed"] == 0);

    // A closed transport makes the server not ready.
    REQUIRE_FALSE(amqp_test::await(fx, [&](auto h) { t.async_close(h); }));
    CHECK_FALSE(t.is_connected());
    auto not_ready = call(http::verb::get, "/health/ready", "");
    CHECK(not_ready.result_int() == 503);
    server.stop();
}

} // namespace integration_ops_http_amqp
