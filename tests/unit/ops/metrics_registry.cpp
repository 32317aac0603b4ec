// SPDX-License-Identifier: BSL-1.0
#include <letterbox/ops/metrics_registry.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace unit_ops_metrics_registry {

using letterbox::ops::metrics_registry;

TEST_CASE("metrics_registry: renders the Prometheus 0.0.4 text format", "[ops][metrics]") {
    metrics_registry reg;
    auto& sent = reg.make_counter("app_sent_total", "Messages sent");
    sent.add();
    sent.add(2);
    sent.add(-5); // counters never go down
    auto& depth = reg.make_gauge("app_depth", "Depth", {{"queue", "orders.dlq"}});
    depth.set(7);
    reg.make_gauge("app_depth", "Depth", {{"queue", "mail.dlq"}}).set(0.25);
    auto& h = reg.make_histogram("app_duration_seconds", "Duration", {0.125, 1});
    h.observe(0.0625);
    h.observe(0.125); // an upper bound is inclusive
    h.observe(3);
    h.observe(std::nan(""));
    reg.add_gauge_function("app_answer", "Computed", {}, [] { return 42.0; });

    CHECK(reg.render() == "# HELP app_sent_total Messages sent\n"
                          "# TYPE app_sent_total counter\n"
                          "app_sent_total 3\n"
                          "# HELP app_depth Depth\n"
                          "# TYPE app_depth gauge\n"
                          "app_depth{queue=\"orders.dlq\"} 7\n"
                          "app_depth{queue=\"mail.dlq\"} 0.25\n"
                          "# HELP app_duration_seconds Duration\n"
                          "# TYPE app_duration_seconds histogram\n"
                          "app_duration_seconds_bucket{le=\"0.125\"} 2\n"
                          "app_duration_seconds_bucket{le=\"1\"} 2\n"
                          "app_duration_seconds_bucket{le=\"+Inf\"} 3\n"
                          "app_duration_seconds_sum 3.1875\n"
                          "app_duration_seconds_count 3\n"
                          "# HELP app_answer Computed\n"
                          "# TYPE app_answer gauge\n"
                          "app_answer 42\n");
}

TEST_CASE("metrics_registry: escapes help texts and label values", "[ops][metrics]") {
    metrics_registry reg;
    reg.make_counter("x_total", "back\\slash and\nnewline", {{"reason", "a \"quoted\"\\\nvalue"}})
        .add();
    CHECK(reg.render() == "# HELP x_total back\\\\slash and\\nnewline\n"
                          "# TYPE x_total counter\n"
                          "x_total{reason=\"a \\\"quoted\\\"\\\\\\nvalue\"} 1\n");
}

TEST_CASE("metrics_registry: special values and the same series twice", "[ops][metrics]") {
    metrics_registry reg;
    auto& g = reg.make_gauge("g", "G");
    CHECK(&g == &reg.make_gauge("g", "G")); // the same series
    g.set(std::numeric_limits<double>::infinity());
    reg.add_gauge_function("down", "D", {}, []() -> double { throw std::runtime_error("no"); });
    reg.add_gauge_function("neg", "N", {}, [] { return -std::numeric_limits<double>::infinity(); });
    const auto text = reg.render();
    CHECK(text.find("\ng +Inf\n") != std::string::npos);
    CHECK(text.find("\ndown NaN\n") != std::string::npos);
    CHECK(text.find("\nneg -Inf\n") != std::string::npos);
}

TEST_CASE("metrics_registry: refuses invalid names and conflicting registrations",
          "[ops][metrics]") {
    metrics_registry reg;
    using letterbox::error;
    CHECK_THROWS_AS(reg.make_counter("9lives", "x"), error);
    CHECK_THROWS_AS(reg.make_counter("has-dash", "x"), error);
    CHECK_THROWS_AS(reg.make_counter("ok", "x", {{"__reserved", "v"}}), error);
    CHECK_THROWS_AS(reg.make_counter("ok", "x", {{"a", "1"}, {"a", "2"}}), error);
    reg.make_counter("c_total", "C");
    CHECK_THROWS_AS(reg.make_gauge("c_total", "C"), error);            // another type
    CHECK_THROWS_AS(reg.make_counter("c_total", "other help"), error); // another help
    reg.add_gauge_function("f", "F", {{"q", "a"}}, [] { return 1.0; });
    CHECK_THROWS_AS(reg.add_gauge_function("f", "F", {{"q", "a"}}, [] { return 2.0; }), error);
    CHECK_THROWS_AS(reg.make_gauge("f", "F", {{"q", "a"}}), error);
    CHECK_THROWS_AS(reg.make_histogram("h", "H", {1, 1}), error);
    CHECK_THROWS_AS(reg.add_gauge_function("e", "E", {}, {}), error);
}

} // namespace unit_ops_metrics_registry
