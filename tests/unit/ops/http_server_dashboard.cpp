// SPDX-License-Identifier: BSL-1.0
// What the dashboard's panels read besides the dead-letter and outbox routes: the ring of
// samples the server keeps (bounded, oldest first, the baseline of a rate), GET /outbox/lag
// (the watched relay's lag, sampled), GET /consumers (the named consumers' counts and delivery
// rates) and GET /topology/findings (the topology check, run off the strand), each 404 until
// it is configured; and the options' checks of the sampling.

#include <letterbox/ops/detail/dashboard_samples.hpp>

#include <letterbox/consumer_event.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/severity.hpp>
#include <letterbox/ops/http_server.hpp>
#include <letterbox/ops/http_server_options.hpp>
#include <letterbox/ops/letterbox_metrics.hpp>
#include <letterbox/ops/metrics_registry.hpp>
#include <letterbox/outbox/relay_counters.hpp>

#include "unit/ops/http_test_support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace unit_ops_http_server_dashboard {

namespace {

using namespace ops_test;
using letterbox::ops::detail::dashboard_sample;
using letterbox::ops::detail::dashboard_samples;
using steady = std::chrono::steady_clock;

/// A relay stand-in whose lag the test sets (read on the server's strand).
struct fake_relay {
    std::atomic<std::int64_t> lag_ms{0};
    letterbox::relay_counters counters() const noexcept {
        letterbox::relay_counters c;
        c.lag = std::chrono::milliseconds(lag_ms.load());
        c.published = 7;
        c.parked = 2;
        return c;
    }
};

dashboard_sample at(steady::time_point t, std::uint64_t delivered) {
    dashboard_sample s;
    s.at = t;
    s.lag_seconds = static_cast<double>(delivered);
    s.delivered = {{"billing", delivered}};
    return s;
}

} // namespace

TEST_CASE("dashboard_samples: keeps the last samples, oldest first", "[ops][http_server]") {
    dashboard_samples ring(3);
    CHECK(ring.empty());
    const auto t0 = steady::time_point{} + std::chrono::hours(1);
    for (std::uint64_t i = 0; i < 5; ++i)
        ring.push(at(t0 + std::chrono::seconds(i), i));
    REQUIRE(ring.size() == 3);
    CHECK(ring.capacity() == 3);
    CHECK(*ring[0].lag_seconds == 2);
    CHECK(*ring[1].lag_seconds == 3);
    CHECK(*ring[2].lag_seconds == 4);
}

TEST_CASE("dashboard_samples: a rate spans from the oldest sample of the window to now",
          "[ops][http_server]") {
    dashboard_samples ring(10);
    const auto t0 = steady::time_point{} + std::chrono::hours(1);
    CHECK(ring.baseline(t0, std::chrono::seconds(60)) == nullptr);
    ring.push(at(t0, 0));                             // out of the window below
    ring.push(at(t0 + std::chrono::seconds(30), 10)); // the baseline
    ring.push(at(t0 + std::chrono::seconds(60), 40));
    const auto now = t0 + std::chrono::seconds(80);
    const auto* base = ring.baseline(now, std::chrono::seconds(60));
    REQUIRE(base != nullptr);
    CHECK(base->at == t0 + std::chrono::seconds(30));
    // 100 delivered now, 10 then, 50 s apart.
    CHECK(dashboard_samples::rate(*base, "billing", 100, now) == Approx(1.8));
    // A consumer the sample does not name had delivered nothing.
    CHECK(dashboard_samples::rate(*base, "shipping", 25, now) == Approx(0.5));
    // No time passed: no rate.
    CHECK_FALSE(dashboard_samples::rate(*base, "billing", 100, base->at).has_value());
}

TEST_CASE("http_server: the dashboard's sources are 404 until configured", "[ops][http_server]") {
    fixture f(false);
    http_server server(f.io.get_executor(), f.options());
    REQUIRE_FALSE(server.listen());
    client c(f, server);
    for (const auto& [path, code] : std::vector<std::pair<std::string, std::string>>{
             {"/outbox/lag", "no_relay"},
             {"/consumers", "no_consumer_metrics"},
             {"/topology/findings", "no_topology_check"}}) {
        INFO(path);
        const auto r = c.get(path, std::nullopt);
        CHECK(r.status() == 404);
        CHECK(r.json()["error"]["code"] == code);
        CHECK(c.post(path, "{}").status() == 405);
    }
}

TEST_CASE("http_server: the options' sampling is checked", "[ops][http_server]") {
    fixture f(false);
    auto o = f.options();
    o.sample_interval = std::chrono::milliseconds(0);
    CHECK_THROWS_AS(http_server(f.io.get_executor(), o), letterbox::error);
    o = f.options();
    o.samples_kept = 1;
    CHECK_THROWS_AS(http_server(f.io.get_executor(), o), letterbox::error);
}

TEST_CASE("http_server: GET /outbox/lag serves the relay's lag and a bounded ring of samples",
          "[ops][http_server]") {
    fixture f(false);
    fake_relay relay;
    relay.lag_ms = 1500;
    auto o = f.options();
    o.sample_interval = std::chrono::milliseconds(5);
    o.samples_kept = 4;
    http_server server(f.io.get_executor(), o);
    server.watch_relay(relay);
    REQUIRE_FALSE(server.listen());
    client c(f, server);
    // No token needed: metadata, as /outbox.
    nlohmann::json body;
    REQUIRE(f.run_until([&] {
        body = c.get("/outbox/lag", std::nullopt).json();
        return body["samples"].size() == 4;
    }));
    CHECK(body["lag_seconds"] == 1.5);
    CHECK(body["published"] == 7);
    CHECK(body["parked"] == 2);
    CHECK(body["interval_seconds"] == 0.005);
    CHECK(body["samples"][0]["lag_seconds"] == 1.5);
    CHECK(body["samples"][0]["time"].get<std::string>().ends_with("Z"));
    // The ring stays at samples_kept, and the newest sample follows the relay.
    relay.lag_ms = 250;
    REQUIRE(f.run_until([&] {
        body = c.get("/outbox/lag", std::nullopt).json();
        return body["samples"].back()["lag_seconds"] == 0.25;
    }));
    CHECK(body["samples"].size() == 4);
    CHECK(body["lag_seconds"] == 0.25);
}

TEST_CASE("http_server: GET /consumers serves each named consumer's counts and rate",
          "[ops][http_server]") {
    fixture f(false);
    letterbox::ops::metrics_registry registry;
    letterbox::ops::letterbox_metrics metrics(registry);
    auto billing = metrics.consumer_observer("billing");
    auto o = f.options();
    o.sample_interval = std::chrono::milliseconds(5);
    o.samples_kept = 100'000; // the first sample stays the baseline
    http_server server(f.io.get_executor(), o);
    server.watch_consumers(metrics);
    REQUIRE_FALSE(server.listen());
    client c(f, server);
    // The first sample (taken at listen) counts nothing yet.
    auto body = c.get("/consumers", std::nullopt).json();
    REQUIRE(body["consumers"].size() == 1);
    CHECK(body["consumers"][0]["delivered"] == 0);

    letterbox::delivery d;
    using kind = letterbox::consumer_event::kind;
    for (auto k : {kind::delivered, kind::acked, kind::delivered, kind::failed, kind::delivered,
                   kind::dead_lettered})
        billing(letterbox::consumer_event{.what = k, .d = d, .reason = "r"});
    REQUIRE(f.run_until([&] {
        body = c.get("/consumers", std::nullopt).json();
        return !body["rate_window_seconds"].is_null();
    }));
    const auto& b = body["consumers"][0];
    CHECK(b["consumer"] == "billing");
    CHECK(b["delivered"] == 3);
    CHECK(b["acked"] == 1);
    CHECK(b["failed"] == 1);
    CHECK(b["dead_lettered"] == 1);
    CHECK(b["retried"] == 0);
    // 3 deliveries since the baseline, over rate_window_seconds.
    REQUIRE(b["delivered_per_second"].is_number());
    CHECK(b["delivered_per_second"].get<double>() ==
          Approx(3.0 / body["rate_window_seconds"].get<double>()).epsilon(0.01));
}

TEST_CASE("http_server: GET /topology/findings runs the check off the strand",
          "[ops][http_server][threads]") {
    using letterbox::lint::severity;
    fixture f(false);
    std::atomic<int> mode{0}; // 0: findings, 1: throws, 2: slow
    std::atomic<bool> on_strand_thread{false};
    const auto test_thread = std::this_thread::get_id();
    auto o = f.options();
    o.store_timeout = std::chrono::milliseconds(100);
    http_server server(f.io.get_executor(), o);
    server.set_topology_check([&]() -> std::vector<letterbox::lint::finding> {
        // The server's strand runs on the test's thread here: the check must not.
        if (std::this_thread::get_id() == test_thread)
            on_strand_thread = true;
        if (mode == 1)
            throw std::runtime_error("definitions file is truncated");
        if (mode == 2)
            std::this_thread::sleep_for(std::chrono::milliseconds(400));
        return {{.level = severity::error,
                 .code = "LB-DLX-MISSING",
                 .objects = {"queue 'orders'", "exchange 'orders.dlx'"},
                 .versions = {"3.10", "4.0"},
                 .why = "The dead-letter exchange does not exist: rejected messages are dropped.",
                 .fix = "Declare exchange 'orders.dlx'."}};
    });
    REQUIRE_FALSE(server.listen());
    client c(f, server);

    auto r = c.get("/topology/findings", std::nullopt);
    REQUIRE(r.status() == 200);
    CHECK(r.json() == nlohmann::json::parse(R"({"findings":[{"severity":"error",
        "code":"LB-DLX-MISSING","objects":["queue 'orders'","exchange 'orders.dlx'"],
        "versions":["3.10","4.0"],
        "why":"The dead-letter exchange does not exist: rejected messages are dropped.",
        "fix":"Declare exchange 'orders.dlx'."}]})"));
    CHECK_FALSE(on_strand_thread);

    mode = 1;
    r = c.get("/topology/findings", std::nullopt);
    CHECK(r.status() == 500);
    CHECK(r.json()["error"]["code"] == "topology_check_failed");
    CHECK(r.json()["error"]["message"] ==
          "the topology check failed: definitions file is truncated");

    mode = 2;
    r = c.get("/topology/findings", std::nullopt);
    CHECK(r.status() == 503);
    CHECK(r.json()["error"]["code"] == "store_busy");
    CHECK(r.json()["error"]["message"].get<std::string>().starts_with(
        "the topology check did not answer within 100 ms (store_timeout)"));
    CHECK(r.res[http::field::retry_after] == "1");
    // The late answer is dropped and the server goes on serving.
    mode = 0;
    REQUIRE(f.run_until([&] { return f.logged("completed after its request got 503"); }));
    CHECK(c.get("/topology/findings", std::nullopt).status() == 200);
}

} // namespace unit_ops_http_server_dashboard
