// SPDX-License-Identifier: BSL-1.0
// The ops endpoint and the metrics under threads, for the ThreadSanitizer pass: the server's
// io_context runs on two threads while clients on four more scrape /metrics, list the queues and
// read the health, and the metrics are updated concurrently by observers; then stop() comes from
// another thread than the server's.

#include <letterbox/ops/http_server.hpp>

#include <letterbox/consumer_event.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/ops/connection_check.hpp>
#include <letterbox/ops/http_server_options.hpp>
#include <letterbox/ops/letterbox_metrics.hpp>
#include <letterbox/ops/metrics_registry.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace unit_ops_http_server_threads {

namespace {

namespace http = boost::beast::http;

unsigned get(unsigned short port, const std::string& target) {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket s(io);
    s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "127.0.0.1");
    http::write(s, req);
    boost::beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(s, buf, res);
    return res.result_int();
}

} // namespace

TEST_CASE("ops http_server: requests from many threads while the io_context runs on two",
          "[ops][threads]") {
    boost::asio::io_context io;
    // The model is single-threaded: its executor is a strand of the two-threaded io_context.
    letterbox::in_memory::broker broker(boost::asio::make_strand(io));
    letterbox::in_memory::transport transport(broker, "ops");
    bool declared = false;
    transport.async_declare(letterbox::topology::queue{"q.dlq"},
                            [&](std::error_code ec) { declared = !ec; });
    for (int i = 0; i < 1000 && !declared; ++i)
        io.run_one_for(std::chrono::milliseconds(10));
    REQUIRE(declared);

    letterbox::ops::metrics_registry registry;
    letterbox::ops::letterbox_metrics metrics(registry);
    letterbox::ops::http_server_options o;
    o.port = 0;
    letterbox::ops::http_server server(io.get_executor(), o);
    server.add_dead_letter_queue(transport, "q.dlq");
    server.set_metrics([&] { return registry.render(); });
    server.add_readiness_check("transport", letterbox::ops::connection_check(transport));
    REQUIRE_FALSE(server.listen());
    const auto port = server.local_endpoint().port();

    io.restart();
    auto guard = boost::asio::make_work_guard(io);
    std::vector<std::thread> runners;
    for (int i = 0; i < 2; ++i)
        runners.emplace_back([&] { io.run(); });

    // Observers update the metrics from their own threads while the clients scrape.
    std::atomic<bool> done = false;
    auto observe = metrics.consumer_observer();
    std::thread updater([&] {
        letterbox::delivery d;
        for (int i = 0; i < 2000 && !done; ++i) {
            observe({letterbox::consumer_event::kind::delivered, d});
            observe({letterbox::consumer_event::kind::dead_lettered, d,
                     i % 2 ? "retries-exhausted" : "custom-" + std::to_string(i % 7)});
        }
    });
    std::atomic<int> ok = 0, failed = 0;
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c) {
        clients.emplace_back([&] {
            for (int i = 0; i < 10; ++i) {
                for (const char* target : {"/metrics", "/queues", "/health"})
                    (get(port, target) == 200 ? ok : failed)++;
            }
        });
    }
    for (auto& t : clients)
        t.join();
    done = true;
    updater.join();

    std::thread stopper([&] { server.stop(); }); // from a thread of its own
    stopper.join();
    guard.reset();
    for (auto& t : runners)
        t.join();
    CHECK(ok == 4 * 10 * 3);
    CHECK(failed == 0);
    CHECK(registry.render().find("letterbox_delivered_total ") != std::string::npos);
}

} // namespace unit_ops_http_server_threads
