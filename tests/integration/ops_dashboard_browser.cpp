// SPDX-License-Identifier: BSL-1.0
// The dashboard in a real browser: headless Chromium (Debian's `chromium`, installed when
// missing) loads the page that http_server serves at `/`, sees the dead-letter queue, its
// entries once the token is typed in (reading them needs it), replays one entry with its
// button, then the rest with the bulk replay by reason, and the depth it shows drops each
// time. The broker is the in-memory model, so the test needs no RabbitMQ; it is an
// integration test because it drives a whole browser.
//
// It also takes the screenshot docs/operations.md shows: dashboard.png in the working directory
// (build/asan/tests under make test); copy it to docs/images/ to update the docs.

#include <letterbox/ops/http_server.hpp>
#include <letterbox/ops/http_server_options.hpp>

#include <letterbox/delivery.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "support/headless_chromium.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdlib>
#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace integration_ops_dashboard_browser {

namespace {

using namespace std::chrono_literals;

constexpr const char* work_queue = "billing.work";
constexpr const char* dlq = "billing.dlq";
constexpr const char* token = "dashboard-test-token";

/// Runs `op(handler)` on `io` until the handler was called (at most 10 s of real time).
template <class... R, class Op>
std::tuple<std::error_code, R...> await(boost::asio::io_context& io, Op op) {
    std::optional<std::tuple<std::error_code, R...>> got;
    op([&](std::error_code ec, R... r) { got.emplace(ec, std::move(r)...); });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!got && std::chrono::steady_clock::now() < deadline) {
        io.restart();
        io.run_for(10ms);
    }
    REQUIRE(got.has_value());
    return *got;
}

/// Three messages rejected from the work queue: the broker dead-letters them into the DLQ with
/// an x-death history naming the work queue.
void fill_dead_letter_queue(boost::asio::io_context& io, letterbox::in_memory::transport& t) {
    letterbox::topology::queue dl{.name = dlq};
    REQUIRE_FALSE(std::get<0>(await(io, [&](auto h) { t.async_declare(dl, h); })));
    letterbox::topology::queue_arguments args;
    args.dead_letter_exchange = "";
    args.dead_letter_routing_key = dlq;
    letterbox::topology::queue work{.name = work_queue, .arguments = args.to_table()};
    REQUIRE_FALSE(std::get<0>(await(io, [&](auto h) { t.async_declare(work, h); })));
    letterbox::message_id_generator ids(7);
    for (const char* type : {"invoice.created", "invoice.paid", "invoice.voided"}) {
        letterbox::message m;
        m.id = ids();
        m.type = type;
        m.routing_key = work_queue;
        m.properties.content_type = "application/json";
        m.body = "{}";
        REQUIRE_FALSE(std::get<0>(await(io, [&](auto h) { t.async_publish(m, h); })));
        auto [ec, d] = await<std::optional<letterbox::delivery>>(
            io, [&](auto h) { t.async_get(work_queue, h); });
        REQUIRE_FALSE(ec);
        REQUIRE(d.has_value());
        REQUIRE_FALSE(std::get<0>(await(io, [&](auto h) { t.async_reject(*d, false, h); })));
    }
}

std::string depth_of(const char* queue) {
    return std::string("(document.querySelector('#queues tr[data-queue=\"") + queue +
           "\"] .depth') || {}).textContent";
}

} // namespace

TEST_CASE("dashboard: a replay in the browser drains the dead-letter queue",
          "[integration][ops][browser]") {
    boost::asio::io_context io;
    letterbox::in_memory::broker broker(io.get_executor());
    letterbox::in_memory::transport transport(broker, "dashboard");
    fill_dead_letter_queue(io, transport);
    REQUIRE(broker.queue(dlq)->ready == 3);

    letterbox::ops::http_server_options o;
    o.port = 0;
    o.token = token;
    letterbox::ops::http_server server(io.get_executor(), o);
    server.add_dead_letter_queue(transport, dlq);
    REQUIRE_FALSE(server.listen());
    const auto url = "http://127.0.0.1:" + std::to_string(server.local_endpoint().port()) + "/";

    // The server and the broker run on their own thread from here; the test drives the browser.
    io.restart();
    auto guard = boost::asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });
    struct joiner {
        boost::asio::io_context& io;
        std::thread& t;
        letterbox::ops::http_server& s;
        decltype(guard)& g;
        ~joiner() {
            std::promise<void> stopped;
            boost::asio::post(io, [&] {
                s.stop();
                stopped.set_value();
            });
            stopped.get_future().wait_for(10s);
            g.reset();
            io.stop();
            t.join();
        }
    } join_at_exit{io, runner, server, guard};

    test_support::headless_chromium browser;
    browser.navigate(url);
    INFO("page status: " << browser.evaluate("document.querySelector('#status').textContent"));
    REQUIRE(browser.wait_for(depth_of(dlq) + " === '3'", 20s));
    // The depths are open; the entries (message bodies) need the token.
    REQUIRE(browser.wait_for(
        "document.querySelector('#status').textContent.startsWith('type the token')", 20s));
    CHECK(browser.evaluate("document.querySelectorAll('#entries tr[data-id]').length") == 0);
    const auto type_token = [&](const std::string& value) {
        browser.evaluate("(() => { const t = document.querySelector('#token'); t.value = '" +
                         value + "'; t.dispatchEvent(new Event('change')); return true; })()");
    };
    type_token(token);
    REQUIRE(
        browser.wait_for("document.querySelectorAll('#entries tr[data-id]').length === 3", 20s));
    CHECK(browser.evaluate("document.querySelector('#entries tr[data-id] .reason').textContent") ==
          "rejected");
    browser.evaluate("document.querySelector('#entries details').open = true");
    browser.screenshot("dashboard.png");

    // With a wrong token the replay is refused, and the page says so; nothing moves.
    browser.evaluate("document.querySelector('#token').value = 'not-the-token'; true");
    browser.evaluate("document.querySelector('#entries tr[data-id] button.replay').click()");
    REQUIRE(browser.wait_for(
        "document.querySelector('#status').textContent.startsWith('replay refused')", 20s));
    CHECK(browser.evaluate(depth_of(dlq)) == "3");
    CHECK(browser.evaluate("document.querySelectorAll('#entries tr[data-id]').length") == 3);

    // With the right one, one entry's button replays that entry only.
    type_token(token);
    REQUIRE(
        browser.wait_for("document.querySelectorAll('#entries tr[data-id]').length === 3", 20s));
    const auto first =
        browser.evaluate("document.querySelector('#entries tr[data-id]').dataset.id");
    browser.evaluate("document.querySelector('#entries tr[data-id] button.replay').click()");
    REQUIRE(browser.wait_for(depth_of(dlq) + " === '2'", 20s));
    CHECK(browser.evaluate("document.querySelector('#status').textContent") ==
          "replayed 1, failed 0, left alone 2");
    // The depth and the table are refreshed by two requests: wait for the table too.
    CHECK(browser.wait_for("![...document.querySelectorAll('#entries tr[data-id]')].some(r => "
                           "r.dataset.id === " +
                               first.dump() + ")",
                           20s));

    // The bulk replay takes every entry with the reason typed in.
    browser.evaluate("document.querySelector('#bulk-reason').value = 'rejected'; "
                     "document.querySelector('#bulk-replay').click()");
    REQUIRE(browser.wait_for(depth_of(dlq) + " === '0'", 20s));
    CHECK(browser.wait_for("document.querySelectorAll('#entries tr[data-id]').length === 0", 20s));
}

} // namespace integration_ops_dashboard_browser
