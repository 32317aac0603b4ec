// SPDX-License-Identifier: BSL-1.0
// The dashboard in a real browser: headless Chromium (Debian's `chromium`, installed when
// missing) loads the page that http_server serves at `/`.
// - The replay: it sees the dead-letter queue, its entries once the token is typed in (reading
//   them needs it), replays one entry with its button, then the rest with the bulk replay by
//   reason, and the depth it shows drops each time.
// - The panels: a dead letter that went through two queues shows its x-death and letterbox
//   fault history as timelines with human times; the outbox panel shows the pending and parked
//   counts, the parked rows grouped by reason and the relay's lag as a sparkline; the consumers
//   panel each named consumer's counts and delivery rate; the topology lint panel the findings
//   of the check; and markup in a message or a finding stays text.
// The broker is the in-memory model, so the test needs no RabbitMQ; it is an integration test
// because it drives a whole browser.
//
// The panels case also takes the screenshot docs/operations.md shows, into a temporary
// directory (removed after its check), or, for the docs, where LETTERBOX_DASHBOARD_SCREENSHOT
// says: docs/operations.md gives the command.

#include <letterbox/ops/http_server.hpp>
#include <letterbox/ops/http_server_options.hpp>

#include <letterbox/consumer_event.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/lint.hpp>
#include <letterbox/lint/severity.hpp>
#include <letterbox/message.hpp>
#include <letterbox/ops/letterbox_metrics.hpp>
#include <letterbox/ops/metrics_registry.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/outbox/relay_counters.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "support/headless_chromium.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

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

/// Runs `io` on a thread of its own from here (the server and the broker), the test driving the
/// browser; stops the server and joins the thread when it goes.
class io_runner {
public:
    io_runner(boost::asio::io_context& io, letterbox::ops::http_server& server)
        : io_(io)
        , server_(server)
        , guard_(boost::asio::make_work_guard(io)) {
        io_.restart();
        thread_ = std::thread([this] { io_.run(); });
    }
    io_runner(const io_runner&) = delete;
    io_runner& operator=(const io_runner&) = delete;
    ~io_runner() {
        std::promise<void> stopped;
        boost::asio::post(io_, [&] {
            server_.stop();
            stopped.set_value();
        });
        stopped.get_future().wait_for(10s);
        guard_.reset();
        io_.stop();
        thread_.join();
    }

private:
    boost::asio::io_context& io_;
    letterbox::ops::http_server& server_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
    std::thread thread_;
};

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
    io_runner running(io, server);

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
    // Nothing else was registered: each panel says what is missing.
    CHECK(browser.wait_for("document.querySelector('#lint-note').textContent === "
                           "'not configured (http_server::set_topology_check)'",
                           20s));
    CHECK(browser.wait_for(
        "document.querySelector('#consumers-note').textContent.startsWith('no metrics registry')",
        20s));
    CHECK(browser.wait_for(
        "document.querySelector('#outbox-note').textContent.startsWith('no outbox store')", 20s));
    CHECK(browser.wait_for("document.querySelector('#outbox-lag-text').textContent === "
                           "'no relay watched (http_server::watch_relay)'",
                           20s));

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

namespace {

constexpr const char* invoices_work = "invoices.work";
constexpr const char* invoices_parking = "invoices.parking";
constexpr const char* invoices_dlq = "invoices.dlq";
constexpr const char* no_route = "no route: exchange 'invoices' has no binding for 'invoice.paid'";
constexpr const char* nacked = "publish nacked by the broker";

/// Declares the DLQ, the parking queue (dead-letters into the DLQ) and the work queue
/// (dead-letters into the parking queue).
void declare_invoice_queues(boost::asio::io_context& io, letterbox::in_memory::transport& t) {
    const auto declare = [&](const char* name, const char* dead_letter_to) {
        letterbox::topology::queue q{.name = name};
        if (dead_letter_to) {
            letterbox::topology::queue_arguments args;
            args.dead_letter_exchange = "";
            args.dead_letter_routing_key = dead_letter_to;
            q.arguments = args.to_table();
        }
        REQUIRE_FALSE(std::get<0>(await(io, [&](auto h) { t.async_declare(q, h); })));
    };
    declare(invoices_dlq, nullptr);
    declare(invoices_parking, invoices_dlq);
    declare(invoices_work, invoices_parking);
}

/// Publishes `m` to `first` and rejects it from each of `queues` in turn.
void reject_through(boost::asio::io_context& io, letterbox::in_memory::transport& t,
                    letterbox::message m, const std::vector<const char*>& queues) {
    m.routing_key = queues.front();
    REQUIRE_FALSE(std::get<0>(await(io, [&](auto h) { t.async_publish(m, h); })));
    for (const char* q : queues) {
        auto [ec, d] =
            await<std::optional<letterbox::delivery>>(io, [&](auto h) { t.async_get(q, h); });
        REQUIRE_FALSE(ec);
        REQUIRE(d.has_value());
        REQUIRE_FALSE(std::get<0>(await(io, [&](auto h) { t.async_reject(*d, false, h); })));
    }
}

/// A relay stand-in whose lag rises and falls, so the sparkline has something to draw.
struct wavy_relay {
    mutable std::atomic<int> reads{0};
    letterbox::relay_counters counters() const {
        const int n = reads.fetch_add(1, std::memory_order_relaxed);
        letterbox::relay_counters c;
        c.lag = std::chrono::milliseconds(static_cast<int>(1500 + 1200 * std::sin(n / 2.5)));
        c.published = 1200 + static_cast<std::uint64_t>(n);
        c.failed = 3;
        c.parked = 3;
        return c;
    }
};

/// What the lint finds in a small topology (lint::check_topology for RabbitMQ 3.10): an error, a
/// warning and a note.
std::vector<letterbox::lint::finding> findings() {
    namespace lint = letterbox::lint;
    // A dead-letter exchange nobody declared (an error), under a name with markup: names come
    // from files and brokers, and stay text.
    letterbox::topology::queue work;
    work.name = "invoices.work<img src=x onerror=\"window.pwned=2\">";
    work.arguments.set("x-dead-letter-exchange", std::string("invoices.dlx"));
    // reject-publish-dlx on a quorum queue runs as drop-head (a warning).
    letterbox::topology::queue audit;
    audit.name = "invoices.audit";
    audit.arguments.set("x-queue-type", std::string("quorum"));
    audit.arguments.set("x-overflow", std::string("reject-publish-dlx"));
    audit.arguments.set("x-max-length", std::int64_t{1000});
    audit.arguments.set("x-dead-letter-exchange", std::string(""));
    audit.arguments.set("x-dead-letter-routing-key", std::string("invoices.parking"));
    letterbox::topology::queue parking;
    parking.name = "invoices.parking";
    // A TTL without a dead-letter exchange: what expires is dropped (a note).
    letterbox::topology::queue cache;
    cache.name = "invoices.cache";
    cache.arguments.set("x-message-ttl", std::int64_t{60000});
    lint::broker_topology t;
    t.queues = {work, audit, parking, cache};
    return lint::check_topology(t, letterbox::in_memory::broker_profile::rabbitmq_3_10());
}

/// Where the screenshot goes: LETTERBOX_DASHBOARD_SCREENSHOT when set (to refresh the docs),
/// else a temporary directory, removed after the check.
struct screenshot_path {
    std::filesystem::path png;
    bool keep = false;
    screenshot_path() {
        if (const char* to = std::getenv("LETTERBOX_DASHBOARD_SCREENSHOT"); to && *to) {
            png = to;
            keep = true;
            return;
        }
        png = std::filesystem::temp_directory_path() /
              ("letterbox-dashboard-" + std::to_string(::getpid()) + ".png");
    }
    ~screenshot_path() {
        std::error_code ignored;
        if (!keep)
            std::filesystem::remove(png, ignored);
    }
};

/// The entries table's row of the message `id` (rows are named by their handle).
std::string row_of(const std::string& id) {
    return "[...document.querySelectorAll('#entries tr[data-id]')].find(r => "
           "r.cells[0].textContent.startsWith('" +
           id + "'))";
}

} // namespace

TEST_CASE("dashboard: every panel shows what the server knows", "[integration][ops][browser]") {
    using letterbox::detail::format_rfc3339;
    namespace h = letterbox::headers;
    boost::asio::io_context io;
    letterbox::in_memory::broker broker(io.get_executor());
    letterbox::in_memory::transport transport(broker, "dashboard-panels");
    declare_invoice_queues(io, transport);

    // A message that failed three times in its handler, was dead-lettered by letterbox's
    // headers' account, and went through two queues (x-death: parking, then work); markup in
    // its type. And one the broker dead-lettered once.
    const auto now = std::chrono::system_clock::now();
    letterbox::message_id_generator ids(11);
    letterbox::message paid;
    paid.id = ids();
    paid.type = "invoice.paid<img src=x onerror=\"window.pwned=1\">";
    paid.properties.content_type = "application/json";
    paid.body = R"({"invoice":"INV-1042","amount":"129.00"})";
    paid.headers.set(h::attempts, std::int64_t{3});
    paid.headers.set(h::death_reason, std::string("retries-exhausted"));
    paid.headers.set(h::exception_type, std::string("billing::card_declined"));
    paid.headers.set(h::exception_message, std::string("card declined"));
    const auto first_failure = now - 3min - 10s;
    const auto dead_lettered = now - 2min;
    paid.headers.set(h::first_failure_time, format_rfc3339(first_failure));
    paid.headers.set(h::last_failure_time, format_rfc3339(dead_lettered));
    paid.headers.set(h::dead_lettered_time, format_rfc3339(dead_lettered));
    // How the page shows a time: "2026-12-07 23:41:05 UTC".
    const auto shown = [](std::chrono::system_clock::time_point t) {
        auto text = format_rfc3339(t).substr(0, 19);
        text[10] = ' ';
        return text + " UTC";
    };
    paid.headers.set(h::consumer_id, std::string("billing-worker"));
    paid.headers.set(h::original_queue, std::string(invoices_work));
    reject_through(io, transport, paid, {invoices_work, invoices_parking});
    letterbox::message voided;
    voided.id = ids();
    voided.type = "invoice.voided";
    voided.body = R"({"invoice":"INV-1043"})";
    reject_through(io, transport, voided, {invoices_parking});
    REQUIRE(broker.queue(invoices_dlq)->ready == 2);
    const auto paid_id = letterbox::to_string(paid.id);

    // The outbox: three rows pending for 90 s, three parked for two reasons.
    letterbox::in_memory_outbox_store outbox;
    letterbox::steady_clock clock;
    std::vector<letterbox::message_id> rows;
    for (int i = 0; i < 6; ++i) {
        letterbox::message m;
        m.id = ids();
        m.type = "invoice.paid";
        m.exchange = "invoices";
        m.routing_key = "invoice.paid";
        letterbox::in_memory_unit_of_work uow;
        REQUIRE_FALSE(outbox.add(uow, {m, "invoice", std::to_string(1040 + i)},
                                 letterbox::store_time{clock.wall_now() - 90s}));
        REQUIRE_FALSE(uow.commit());
        rows.push_back(m.id);
    }
    REQUIRE_FALSE(outbox.park(rows[3], no_route));
    REQUIRE_FALSE(outbox.park(rows[4], no_route));
    REQUIRE_FALSE(outbox.park(rows[5], nacked));

    letterbox::ops::metrics_registry registry;
    letterbox::ops::letterbox_metrics metrics(registry);
    auto billing = metrics.consumer_observer("billing-worker");
    auto shipping = metrics.consumer_observer("shipping-worker");
    wavy_relay relay;

    letterbox::ops::http_server_options o;
    o.port = 0;
    o.token = token;
    // Samples every 100 ms, two minutes of them: the sparkline fills at once, and the rate's
    // baseline (the oldest sample of the last minute) precedes the deliveries below.
    o.sample_interval = 100ms;
    o.samples_kept = 1200;
    letterbox::ops::http_server server(io.get_executor(), o);
    server.add_dead_letter_queue(transport, invoices_dlq);
    server.set_outbox(outbox, clock);
    server.watch_relay(relay);
    server.watch_consumers(metrics);
    server.set_topology_check(findings);
    REQUIRE_FALSE(server.listen());
    const auto url = "http://127.0.0.1:" + std::to_string(server.local_endpoint().port()) + "/";
    io_runner running(io, server);

    test_support::headless_chromium browser;
    browser.navigate(url);
    INFO("page status: " << browser.evaluate("document.querySelector('#status').textContent"));
    browser.evaluate("(() => { const t = document.querySelector('#token'); t.value = '" +
                     std::string(token) +
                     "'; t.dispatchEvent(new Event('change')); return true; })()");
    REQUIRE(
        browser.wait_for("document.querySelectorAll('#entries tr[data-id]').length === 2", 20s));

    { // the dead letter's history as timelines
        const auto row = row_of(paid_id);
        const auto xdeath =
            row + ".querySelectorAll('table.xdeath-timeline:not(.earlier) tr.xdeath')";
        REQUIRE(browser.evaluate(xdeath + ".length") == 2);
        const auto field = [&](int i, const char* cls) {
            return browser.evaluate(xdeath + "[" + std::to_string(i) + "].querySelector('." + cls +
                                    "').textContent");
        };
        // As the broker lists them: the most recent death first.
        CHECK(field(0, "queue") == invoices_parking);
        CHECK(field(1, "queue") == invoices_work);
        CHECK(field(0, "reason") == "rejected");
        CHECK(field(1, "reason") == "rejected");
        CHECK(field(0, "count") == "1");
        CHECK(field(0, "exchange") == "(default)");
        CHECK(field(1, "keys") == invoices_work);
        // Human times: UTC to the second, and how long ago; not {"$timestamp": ...}.
        CHECK(browser.evaluate("/^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2} UTC$/.test(" + xdeath +
                               "[0].querySelector('.utc').textContent)") == true);
        CHECK(browser.evaluate("/^\\((just now|\\d+ s ago)\\)$/.test(" + xdeath +
                               "[0].querySelector('.ago').textContent)") == true);
        CHECK(browser.evaluate(row + ".querySelector('table.xdeath-timeline').textContent"
                                     ".includes('$timestamp')") == false);
        // letterbox's fault history, in time order.
        const auto fault = row + ".querySelectorAll('table.fault-timeline tr[data-event]')";
        CHECK(browser.evaluate("[..." + fault + "].map(r => r.dataset.event).join(',')") ==
              "first-failure,last-failure,dead-lettered");
        const auto event = [&](const char* name, const char* cls) {
            return browser.evaluate(row +
                                    ".querySelector('table.fault-timeline "
                                    "tr[data-event=\"" +
                                    name + "\"] ." + cls + "').textContent");
        };
        CHECK(event("first-failure", "utc") == shown(first_failure));
        CHECK(browser.evaluate("/^\\(\\d+ min ago\\)$/.test(" +
                               nlohmann::json(event("first-failure", "ago")).dump() + ")") == true);
        CHECK(event("last-failure", "what") ==
              "last failure, attempt 3: billing::card_declined: card declined");
        CHECK(event("dead-lettered", "what") ==
              "dead-lettered: retries-exhausted by consumer billing-worker from queue "
              "invoices.work");
        CHECK(browser.evaluate(row + ".cells[1].textContent") == "retries-exhausted");
        CHECK(browser.evaluate(row + ".cells[3].querySelector('.utc').textContent") ==
              shown(dead_lettered));
        // The raw JSON is still there, behind its disclosure.
        CHECK(browser.evaluate(row + ".querySelector('details.raw pre').textContent"
                                     ".includes('\"$timestamp\"')") == true);
        // The other entry: one death, no letterbox history.
        CHECK(browser.evaluate("[...document.querySelectorAll('#entries tr[data-id]')].map(r => "
                               "r.querySelectorAll('table.xdeath-timeline tr.xdeath').length + "
                               "'/' + r.querySelectorAll('table.fault-timeline').length)"
                               ".join(' ')") == "2/1 1/0");
    }

    { // the outbox: counts, parked reasons, and the relay's lag drawn
        REQUIRE(browser.wait_for("document.querySelector('#outbox-pending').textContent === '3' && "
                                 "document.querySelector('#outbox-parked').textContent === '3'",
                                 20s));
        CHECK(browser.evaluate("document.querySelector('#outbox-oldest').textContent") == "1 min");
        const auto reason_count = [&](const char* reason) {
            return browser.evaluate(
                "(() => { const r = [...document.querySelectorAll('#outbox-parked-reasons "
                "tr[data-reason]')].find(r => r.dataset.reason === " +
                nlohmann::json(reason).dump() +
                "); return r ? r.querySelector('.count').textContent : null; })()");
        };
        CHECK(reason_count(no_route) == "2");
        CHECK(reason_count(nacked) == "1");
        CHECK(browser.evaluate("[...document.querySelectorAll('#outbox-parked-reasons "
                               "tr[data-reason]')].map(r => r.dataset.reason)") ==
              nlohmann::json::array({no_route, nacked}));
        // A sparkline of the samples the server took every 100 ms.
        REQUIRE(browser.wait_for(
            "(document.querySelector('#outbox-lag svg polyline') || { points: { numberOfItems: 0 "
            "} }).points.numberOfItems >= 3",
            20s));
        CHECK(browser.evaluate("(() => { const p = document.querySelector('#outbox-lag svg "
                               "polyline').points; const ys = new Set(); for (let i = 0; i < "
                               "p.numberOfItems; ++i) ys.add(p.getItem(i).y); return ys.size; "
                               "})() > 1") == true);
        CHECK(browser.evaluate("document.querySelector('#outbox-lag-text').textContent"
                               ".startsWith('now ')") == true);
    }

    { // the consumers: counts and delivery rates
        letterbox::delivery d;
        d.queue = invoices_work;
        using kind = letterbox::consumer_event::kind;
        const auto feed = [&](auto& observer, kind k, int n, std::string_view reason = {}) {
            for (int i = 0; i < n; ++i)
                observer(letterbox::consumer_event{.what = k, .d = d, .reason = reason});
        };
        feed(billing, kind::delivered, 40);
        feed(billing, kind::acked, 36);
        feed(billing, kind::failed, 2, "card declined");
        feed(billing, kind::retried, 4, "card declined");
        feed(billing, kind::redelivered, 1, "card declined");
        feed(billing, kind::dead_lettered, 1, "retries-exhausted");
        feed(shipping, kind::delivered, 12);
        feed(shipping, kind::acked, 12);
        browser.evaluate("refreshPanels().then(() => true)");
        const auto consumer = [&](const char* name, const char* cls) {
            return "(document.querySelector('#consumers tr[data-consumer=\"" + std::string(name) +
                   "\"] ." + cls + "') || {}).textContent";
        };
        REQUIRE(browser.wait_for(consumer("billing-worker", "delivered") + " === '40'", 20s));
        CHECK(browser.evaluate(consumer("billing-worker", "acked")) == "36");
        CHECK(browser.evaluate(consumer("billing-worker", "failed")) == "2");
        CHECK(browser.evaluate(consumer("billing-worker", "retried")) == "4");
        CHECK(browser.evaluate(consumer("billing-worker", "redelivered")) == "1");
        CHECK(browser.evaluate(consumer("billing-worker", "dead-lettered")) == "1");
        CHECK(browser.evaluate("parseFloat(" + consumer("billing-worker", "rate") + ") > 0") ==
              true);
        CHECK(browser.evaluate(consumer("shipping-worker", "delivered")) == "12");
        CHECK(browser.evaluate("document.querySelector('#consumers-note').textContent"
                               ".startsWith('rates over the last')") == true);
    }

    { // the topology lint: the findings, errors first
        REQUIRE(
            browser.wait_for("document.querySelectorAll('#lint tr[data-code]').length === 3", 20s));
        CHECK(browser.evaluate("[...document.querySelectorAll('#lint tr[data-code]')]"
                               ".map(r => r.dataset.code)") ==
              nlohmann::json::array({"LB-DLX-MISSING", "LB-QQ-OVERFLOW-DLX", "LB-DLX-NONE"}));
        CHECK(browser.evaluate("document.querySelector('#lint tr[data-code=\"LB-DLX-MISSING\"] "
                               ".badge').className") == "badge error");
        CHECK(browser.evaluate("document.querySelector('#lint tr[data-code=\"LB-DLX-MISSING\"] "
                               ".badge').textContent") == "error");
        CHECK(browser.evaluate("[...document.querySelectorAll('#lint "
                               "tr[data-code=\"LB-QQ-OVERFLOW-DLX\"] .versions div')]"
                               ".map(d => d.textContent)") ==
              nlohmann::json::array({"3.10", "3.13.0", "3.13", "4.0", "4.3"}));
        CHECK(browser.evaluate("document.querySelector('#lint tr[data-code=\"LB-DLX-MISSING\"] "
                               ".fix').textContent") == findings()[0].fix);
        CHECK(browser.evaluate("document.querySelector('#lint-note').textContent"
                               ".startsWith('1 error, 1 warning, 1 note')") == true);
    }

    { // markup from messages and findings stays text
        REQUIRE(
            browser.wait_for("document.querySelectorAll('#lint tr[data-code]').length === 3", 20s));
        CHECK(browser.evaluate(row_of(paid_id) + ".cells[0].textContent.includes('<img')") == true);
        CHECK(browser.evaluate("document.querySelector('#lint tr[data-code=\"LB-DLX-MISSING\"] "
                               ".objects').textContent.includes('<img')") == true);
        CHECK(browser.evaluate("document.querySelectorAll('img').length") == 0);
        CHECK(browser.evaluate("typeof window.pwned") == "undefined");
    }

    { // the screenshot of the whole page
        REQUIRE(browser.wait_for(
            "document.querySelectorAll('#lint tr[data-code]').length === 3 && "
            "document.querySelectorAll('#consumers tr[data-consumer]').length === 2 && "
            "document.querySelector('#outbox-lag svg polyline') !== null",
            20s));
        browser.evaluate(row_of(paid_id) + ".querySelector('details.history').open = true");
        screenshot_path shot;
        browser.screenshot(shot.png, true);
        std::ifstream in(shot.png, std::ios::binary);
        std::string magic(8, '\0');
        in.read(magic.data(), 8);
        CHECK(magic == "\x89PNG\r\n\x1a\n");
        CHECK(std::filesystem::file_size(shot.png) > 20'000);
    }
}

} // namespace integration_ops_dashboard_browser
