// SPDX-License-Identifier: BSL-1.0
// depth_gauge on the virtual clock: polls on its timer, keeps the last value, and calls
// on_threshold once on the way up and once on the way down.

#include <letterbox/dlq/depth_gauge.hpp>

#include <letterbox/concepts/clock.hpp>
#include <letterbox/dlq/depth_gauge_options.hpp>
#include <letterbox/error.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "dlq_world.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace unit_dlq_depth_gauge {

namespace {

using namespace dlq_test;
using gauge_type =
    letterbox::dlq::depth_gauge<letterbox::in_memory::transport, letterbox::virtual_clock>;

struct crossing {
    bool above;
    std::uint32_t depth;
    friend bool operator==(const crossing&, const crossing&) = default;
};

letterbox::dlq::depth_gauge_options options(std::vector<crossing>& seen,
                                            std::optional<std::uint32_t> threshold = 3) {
    letterbox::dlq::depth_gauge_options o;
    o.interval = std::chrono::seconds{10};
    o.threshold = threshold;
    o.on_threshold = [&seen](bool above, std::uint32_t depth) {
        seen.push_back({above, depth});
    };
    return o;
}

} // namespace

TEST_CASE("the gauge measures the depth on every interval", "[dlq]") {
    world w;
    std::vector<crossing> seen;
    gauge_type gauge(w.transport, w.clock, dlq_name, options(seen, std::nullopt));
    CHECK_FALSE(gauge.value().has_value());
    gauge.start();
    w.run_for(1s);
    CHECK(gauge.value() == std::optional<std::uint32_t>(0));

    w.dead_letter_explicitly();
    w.dead_letter_explicitly();
    w.run_for(5s); // before the next poll
    CHECK(gauge.value() == std::optional<std::uint32_t>(0));
    w.run_for(5s);
    CHECK(gauge.value() == std::optional<std::uint32_t>(2));
    CHECK(seen.empty()); // no threshold, no calls
    CHECK(gauge.failed_polls() == 0);
    CHECK(gauge.queue() == dlq_name);
}

TEST_CASE("on_threshold fires once above and once below again", "[dlq]") {
    world w;
    std::vector<crossing> seen;
    gauge_type gauge(w.transport, w.clock, dlq_name, options(seen));
    gauge.start();
    w.run_for(30s);
    CHECK(seen.empty()); // starting below calls nothing

    w.dead_letter_explicitly();
    w.dead_letter_natively();
    w.run_for(30s);
    CHECK(seen.empty());
    CHECK(gauge.value() == std::optional<std::uint32_t>(2));

    w.dead_letter_explicitly();
    w.run_for(10s);
    REQUIRE(seen == std::vector<crossing>{{true, 3}});
    CHECK(gauge.above());
    w.dead_letter_explicitly();
    w.run_for(60s); // six more polls above: no more calls
    CHECK(seen == std::vector<crossing>{{true, 3}});
    CHECK(gauge.value() == std::optional<std::uint32_t>(4));

    REQUIRE(w.drain(dlq_name).size() == 4);
    w.run_for(10s);
    REQUIRE(seen == std::vector<crossing>{{true, 3}, {false, 0}});
    CHECK_FALSE(gauge.above());
    w.run_for(60s);
    CHECK(seen.size() == 2);
}

TEST_CASE("a failed poll counts and keeps the last value, polling goes on", "[dlq]") {
    world w;
    std::vector<crossing> seen;
    gauge_type gauge(w.transport, w.clock, "dlq.not.yet", options(seen));
    gauge.start();
    w.run_for(25s);
    CHECK_FALSE(gauge.value().has_value());
    CHECK(gauge.failed_polls() == 3); // at 0 s, 10 s and 20 s

    letterbox::topology::queue q;
    q.name = "dlq.not.yet";
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_declare(q, h); }));
    w.run_for(10s);
    CHECK(gauge.value() == std::optional<std::uint32_t>(0));
    CHECK(gauge.failed_polls() == 3);
}

TEST_CASE("a stopped or destroyed gauge polls no more", "[dlq]") {
    world w;
    std::vector<crossing> seen;
    {
        gauge_type gauge(w.transport, w.clock, dlq_name, options(seen, 1));
        gauge.start();
        gauge.start(); // already running: nothing more
        w.run_for(1s);
        CHECK(gauge.value() == std::optional<std::uint32_t>(0));
        gauge.stop();
        gauge.stop();
        w.dead_letter_explicitly();
        w.run_for(60s);
        CHECK(gauge.value() == std::optional<std::uint32_t>(0));
        CHECK(seen.empty());

        gauge.start(); // and again
        w.run_for(1s);
        CHECK(gauge.value() == std::optional<std::uint32_t>(1));
        CHECK(seen == std::vector<crossing>{{true, 1}});
    }
    // Destroyed while its timer was armed: the wait is cancelled, nothing runs after.
    CHECK(w.clock.pending() == 0);
    w.dead_letter_explicitly();
    w.run_for(60s);
    CHECK(seen.size() == 1);
}

TEST_CASE("the interval must be positive", "[dlq]") {
    world w;
    letterbox::dlq::depth_gauge_options o;
    o.interval = std::chrono::milliseconds{0};
    CHECK_THROWS_AS(gauge_type(w.transport, w.clock, dlq_name, o), letterbox::error);
}

namespace {

//[dlq_depth_alert
// Alerts when ten or more messages wait in work.dlq, and resolves the alert when it drains.
template <letterbox::clock Clock>
auto watch_dead_letters(letterbox::in_memory::transport& transport, Clock& clock,
                        std::function<void(const std::string&)> alert) {
    letterbox::dlq::depth_gauge_options o;
    o.interval = std::chrono::seconds{30};
    o.threshold = 10;
    o.on_threshold = [alert = std::move(alert)](bool above, std::uint32_t depth) {
        alert((above ? "FIRING: work.dlq holds " : "RESOLVED: work.dlq holds ") +
              std::to_string(depth) + " messages");
    };
    using gauge = letterbox::dlq::depth_gauge<letterbox::in_memory::transport, Clock>;
    auto g = std::make_unique<gauge>(transport, clock, "work.dlq", o);
    g->start();
    return g; // g->value(), from any thread, feeds a metrics exporter
}
//]

} // namespace

TEST_CASE("docs: alert when the dead-letter queue fills up, resolve when it drains", "[dlq]") {
    world w;
    std::vector<std::string> alerts;
    auto gauge = watch_dead_letters(w.transport, w.clock,
                                    [&alerts](const std::string& text) { alerts.push_back(text); });
    for (int i = 0; i < 12; ++i)
        w.dead_letter_explicitly();
    w.run_for(std::chrono::minutes{5});
    REQUIRE(w.drain(dlq_name).size() == 12);
    w.run_for(std::chrono::minutes{5});
    CHECK(alerts == std::vector<std::string>{"FIRING: work.dlq holds 12 messages",
                                             "RESOLVED: work.dlq holds 0 messages"});
    CHECK(gauge->value() == std::optional<std::uint32_t>(0));
}

} // namespace unit_dlq_depth_gauge
