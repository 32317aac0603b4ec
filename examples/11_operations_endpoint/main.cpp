// SPDX-License-Identifier: BSL-1.0
//
// Example 11: the operations endpoint. A payments worker dead-letters a poison message; an
// operator finds it through the HTTP endpoint (health, Prometheus metrics, the dead-letter
// API, whose message bodies need the token), is refused a replay without the token, then
// replays it by reason once the bug is fixed, and watches the dead-letter depth go back to 0.
// The dashboard at / shows the same in a browser.
//
// The worker, the broker (the in-memory model) and the endpoint run on one io_context on a
// background thread; main() plays the operator with a plain HTTP client on 127.0.0.1.
// Needs: letterbox::ops. Run: build/release/examples/example_11_operations_endpoint
#include <letterbox/dlq/depth_gauge.hpp>
#include <letterbox/letterbox.hpp>
#include <letterbox/ops.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>

using namespace letterbox;
using namespace std::chrono_literals;
namespace http = boost::beast::http;

namespace {

constexpr const char* token = "example-operator-token"; // in production: from a secret store

struct response {
    unsigned status = 0;
    std::string body;
};

// One request to the endpoint, as curl would send it.
response request(unsigned short port, http::verb verb, const std::string& target,
                 const std::string& body = {}, bool with_token = false) {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (with_token)
        req.set(http::field::authorization, std::string("Bearer ") + token);
    if (!body.empty()) {
        req.set(http::field::content_type, "application/json");
        req.body() = body;
    }
    req.prepare_payload();
    http::write(socket, req);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(socket, buffer, res);
    return {res.result_int(), res.body()};
}

// The line of the metrics text that starts with `series`.
std::string metric_line(const std::string& text, const std::string& series) {
    const auto at = text.find("\n" + series + " ");
    if (at == std::string::npos)
        return series + " (missing)";
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

// Waits (at most 10 s) until `done()`.
bool wait_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    return done();
}

int fail(const char* what) {
    std::fprintf(stderr, "MISMATCH: %s\n", what);
    return 1;
}

} // namespace

int main() {
    boost::asio::io_context io;
    steady_clock clock;
    in_memory::broker broker(io.get_executor());
    in_memory::transport transport(broker, "payments-worker");
    auto on_io = [&](auto f) { // runs f on the io thread and waits for it
        std::promise<void> done;
        boost::asio::post(io, [&] {
            f();
            done.set_value();
        });
        done.get_future().wait();
    };

    // The worker: payments.work with its retry and dead-letter queues, the letterbox pipeline.
    const topology::retry_topology topo{.queue = "payments.work", .delays = {1s}};
    std::atomic<bool> declared = false, bug_fixed = false;
    std::atomic<int> processed = 0;
    topology::async_declare_all(transport, topo.queues(),
                                [&](std::error_code ec) { declared = !ec; });
    auto handle = [&](const message& m) {
        const auto doc = nlohmann::json::parse(m.body);
        (void)(bug_fixed && !doc.contains("amount") ? doc.at("total") : doc.at("amount"));
        ++processed;
    };

    //[ops_wiring
    ops::metrics_registry registry;
    ops::letterbox_metrics metrics(registry);
    auto pipeline = middleware::compose(
        handle, middleware::dead_letter({.consumer_id = "payments-worker"}, clock),
        middleware::redelivery(backoff::exponential(1s, 2.0, 4s, 3), topo, clock));
    consumer worker(
        transport, pipeline, clock,
        {.consume = {.queue = "payments.work"}, .on_event = metrics.consumer_observer()});

    std::atomic<bool> alerted = false;
    dlq::depth_gauge dlq_depth(
        transport, clock, "payments.work.dlq",
        {.interval = 50ms, .threshold = 1, .on_threshold = [&](bool above, std::uint32_t) {
             if (above)
                 alerted = true; // page someone
         }});
    metrics.watch_dead_letter_queue("payments.work.dlq", [&] { return dlq_depth.value(); });

    ops::http_server_options options; // 127.0.0.1, limits and timeouts on by default
    options.port = 0;                 // any free port (9464 by default)
    options.token = token;            // POST, DELETE and message bodies need it:
                                      // "Authorization: Bearer <token>"
    ops::http_server server(io.get_executor(), options);
    server.add_dead_letter_queue(transport, "payments.work.dlq");
    server.set_metrics([&] { return registry.render(); });
    server.add_readiness_check("transport", ops::connection_check(transport));
    if (auto ec = server.listen())
        return fail("listen");
    //]
    const auto port = server.local_endpoint().port();

    auto guard = boost::asio::make_work_guard(io);
    std::thread io_thread([&] { io.run(); });
    struct stopper {
        std::function<void()> f;
        ~stopper() { f(); }
    } stop_at_exit{[&] {
        on_io([&] {
            server.stop();
            dlq_depth.stop();
        });
        guard.reset();
        io.stop();
        io_thread.join();
    }};
    if (!wait_until([&] { return declared.load(); }))
        return fail("declare");
    std::atomic<int> failed_operations{0}; // a start or a publish that did not succeed
    auto count_failure = [&failed_operations](error_code ec, auto&&...) {
        if (ec)
            ++failed_operations;
    };
    on_io([&] {
        worker.async_start(count_failure);
        dlq_depth.start();
        for (const char* body : {R"({"order": 1, "amount": 1200})", R"({"order": 2, "total": 990})",
                                 R"({"order": 3, "amount": 75})"}) {
            message m;
            m.id = message_id_generator(std::hash<std::string>{}(body))();
            m.type = "payment.requested";
            m.routing_key = "payments.work";
            m.body = body;
            m.properties.content_type = "application/json";
            transport.async_publish(m, count_failure);
        }
    });
    if (!wait_until([&] { return processed == 2 && alerted; }))
        return fail("the poison message was not dead-lettered");
    if (failed_operations != 0)
        return fail("start or publish");
    std::printf("worker: 2 of 3 payments processed; the DLQ alert fired\n");

    auto health = request(port, http::verb::get, "/health");
    std::printf("GET /health -> %u %s\n", health.status, health.body.c_str());

    auto text = request(port, http::verb::get, "/metrics").body;
    for (const char* series : {"letterbox_delivered_total", "letterbox_acked_total",
                               "letterbox_dead_lettered_total{reason=\"permanent-failure\"}",
                               "letterbox_dlq_depth{queue=\"payments.work.dlq\"}"})
        std::printf("GET /metrics -> %s\n", metric_line(text, series).c_str());

    auto anonymous = request(port, http::verb::get, "/dlq/payments.work.dlq");
    std::printf("GET /dlq/payments.work.dlq without the token -> %u\n", anonymous.status);
    auto listed =
        request(port, http::verb::get, "/dlq/payments.work.dlq?reason=permanent-failure", {}, true);
    const auto entries = nlohmann::json::parse(listed.body).at("entries");
    std::printf("GET /dlq/payments.work.dlq?reason=permanent-failure -> %u, %zu entry: %s, %s\n",
                listed.status, entries.size(),
                entries.at(0).at("reason").get<std::string>().c_str(),
                entries.at(0).at("exception").at("type").get<std::string>().c_str());

    const std::string by_reason = R"({"reason": "permanent-failure"})";
    auto refused = request(port, http::verb::post, "/dlq/payments.work.dlq/replay", by_reason);
    std::printf("POST /dlq/payments.work.dlq/replay without the token -> %u\n", refused.status);

    bug_fixed = true; // the decoder now accepts "total"
    auto replayed =
        request(port, http::verb::post, "/dlq/payments.work.dlq/replay", by_reason, true);
    std::printf("POST /dlq/payments.work.dlq/replay with the token -> %u %s\n", replayed.status,
                replayed.body.c_str());
    if (!wait_until([&] { return processed == 3; }))
        return fail("the replayed payment was not processed");
    auto queues = request(port, http::verb::get, "/queues");
    std::printf("GET /queues -> %s\n", queues.body.c_str());
    std::printf("worker: 3 of 3 payments processed\n");
    const bool as_expected = health.status == 200 && anonymous.status == 401 &&
                             refused.status == 401 && replayed.status == 200;
    return as_expected ? 0 : 1;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   worker: 2 of 3 payments processed; the DLQ alert fired
//   GET /health -> 200 .*"status":"ready"
//   GET /metrics -> letterbox_delivered_total 3
//   GET /metrics -> letterbox_acked_total 2
//   GET /metrics -> letterbox_dead_lettered_total\{reason="permanent-failure"\} 1
//   GET /metrics -> letterbox_dlq_depth\{queue="payments\.work\.dlq"\} 1
//   GET /dlq/payments\.work\.dlq without the token -> 401
//   GET /dlq/payments\.work\.dlq\?reason=permanent-failure -> 200, 1 entry: permanent-failure,
//   out_of_range
//   POST /dlq/payments\.work\.dlq/replay without the token -> 401
//   POST /dlq/payments\.work\.dlq/replay with the token -> 200
//   \{"failed":0,"failures":\[\],"replayed":1,"skipped":0\}
//   GET /queues -> \{"queues":\[\{"depth":0,"queue":"payments\.work\.dlq"\}\]\}
//   worker: 3 of 3 payments processed
