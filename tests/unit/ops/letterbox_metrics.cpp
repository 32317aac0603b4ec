// SPDX-License-Identifier: BSL-1.0
// letterbox_metrics: the pulled gauges (outbox, inbox, dead-letter depth with its alert) on the
// in-memory models and the virtual clock. The pushed counters are compared with the
// simulation's history in tests/property/ops_metrics_simulation.cpp.

#include <letterbox/ops/letterbox_metrics.hpp>

#include <letterbox/consumer_event.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/dlq/depth_gauge.hpp>
#include <letterbox/dlq/depth_gauge_options.hpp>
#include <letterbox/event_sourcing/projection_batch.hpp>
#include <letterbox/event_sourcing/projection_stats.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/message.hpp>
#include <letterbox/ops/consumer_counts.hpp>
#include <letterbox/ops/metrics_registry.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/prometheus_sample.hpp"
#include "unit/dlq/dlq_world.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace unit_ops_letterbox_metrics {

using test_support::prometheus_sample;

TEST_CASE("letterbox_metrics: every family is there before anything happened", "[ops][metrics]") {
    letterbox::ops::metrics_registry reg;
    letterbox::ops::letterbox_metrics metrics(reg);
    const auto text = reg.render();
    for (const char* name :
         {"letterbox_published_total", "letterbox_confirmed_total", "letterbox_returned_total",
          "letterbox_nacked_total", "letterbox_delivered_total", "letterbox_acked_total",
          "letterbox_rejected_total", "letterbox_retried_total", "letterbox_redelivered_total",
          "letterbox_deduplicated_total"}) {
        INFO(name);
        CHECK(prometheus_sample(text, name) == 0);
    }
    CHECK(prometheus_sample(text, "letterbox_dead_lettered_total{reason=\"retries-exhausted\"}") ==
          0);
    CHECK(prometheus_sample(text, "letterbox_handler_duration_seconds_count") == 0);
    CHECK(prometheus_sample(text, "letterbox_relay_confirm_latency_seconds_count") == 0);
}

TEST_CASE("letterbox_metrics: a named consumer observer counts per consumer and in the families",
          "[ops][metrics]") {
    using kind = letterbox::consumer_event::kind;
    letterbox::ops::metrics_registry reg;
    letterbox::ops::letterbox_metrics metrics(reg);
    CHECK(metrics.consumers().empty());
    auto billing = metrics.consumer_observer("billing");
    auto shipping = metrics.consumer_observer("shipping");
    auto billing_too = metrics.consumer_observer("billing"); // shares billing's counts
    auto anonymous = metrics.consumer_observer();
    letterbox::delivery d;
    const auto feed = [&](auto& observer, kind k, std::string_view reason = {}) {
        observer(letterbox::consumer_event{.what = k, .d = d, .reason = reason});
    };
    for (auto k : {kind::delivered, kind::handled, kind::acked, kind::delivered, kind::handled,
                   kind::failed, kind::retried, kind::handled, kind::redelivered})
        feed(billing, k);
    feed(billing_too, kind::delivered);
    feed(billing_too, kind::dead_lettered, "retries-exhausted");
    feed(shipping, kind::delivered);
    feed(shipping, kind::rejected, "boom");
    feed(shipping, kind::forward_failed);
    feed(anonymous, kind::delivered);

    const auto counts = metrics.consumers();
    REQUIRE(counts.size() == 2);
    CHECK(counts[0] == letterbox::ops::consumer_counts{.consumer = "billing",
                                                       .delivered = 3,
                                                       .acked = 1,
                                                       .failed = 1,
                                                       .rejected = 0,
                                                       .retried = 1,
                                                       .redelivered = 1,
                                                       .dead_lettered = 1,
                                                       .forward_failed = 0});
    CHECK(counts[1] == letterbox::ops::consumer_counts{.consumer = "shipping",
                                                       .delivered = 1,
                                                       .acked = 0,
                                                       .failed = 0,
                                                       .rejected = 1,
                                                       .retried = 0,
                                                       .redelivered = 0,
                                                       .dead_lettered = 0,
                                                       .forward_failed = 1});
    // The families count every observer's events, with no consumer label.
    const auto text = reg.render();
    CHECK(prometheus_sample(text, "letterbox_delivered_total") == 5);
    CHECK(prometheus_sample(text, "letterbox_dead_lettered_total{reason=\"retries-exhausted\"}") ==
          1);
    CHECK(text.find("consumer=") == std::string::npos);
}

TEST_CASE("letterbox_metrics: outbox and inbox gauges are read when rendered", "[ops][metrics]") {
    letterbox::ops::metrics_registry reg;
    letterbox::ops::letterbox_metrics metrics(reg);
    letterbox::virtual_clock clock;
    letterbox::in_memory_outbox_store outbox;
    letterbox::in_memory_inbox_store inbox;
    metrics.watch_outbox(outbox, clock);
    metrics.watch_inbox(inbox);

    letterbox::message_id_generator ids(1);
    letterbox::in_memory_unit_of_work uow;
    for (int i = 0; i < 3; ++i) {
        letterbox::message m;
        m.id = ids();
        REQUIRE_FALSE(outbox.add(uow, {m, "order", std::to_string(i)}, clock.wall_now()));
    }
    REQUIRE_FALSE(inbox.try_record(uow, "billing", ids(), clock.wall_now()));
    REQUIRE_FALSE(uow.commit());
    clock.advance(std::chrono::seconds(90));

    const auto text = reg.render();
    CHECK(prometheus_sample(text, "letterbox_outbox_pending") == 3);
    CHECK(prometheus_sample(text, "letterbox_outbox_parked") == 0);
    CHECK(prometheus_sample(text, "letterbox_outbox_oldest_pending_age_seconds") == 90);
    CHECK(prometheus_sample(text, "letterbox_inbox_records") == 1);
}

TEST_CASE("letterbox_metrics: a projection's position and lag are gauges, its consistency lag a "
          "histogram",
          "[ops][metrics][projection]") {
    using namespace std::chrono_literals;
    letterbox::ops::metrics_registry reg;
    letterbox::ops::letterbox_metrics metrics(reg);
    struct fake_runner {
        letterbox::projection_stats s;
        std::error_code fail;
        letterbox::projection_stats stats(std::error_code& ec) {
            ec = fail;
            return s;
        }
    } runner{{.position = 40, .head = 45, .lag_events = 5, .lag_time = 1500ms}, {}};
    metrics.watch_projection("balances", runner);
    auto text = reg.render();
    CHECK(prometheus_sample(text, "letterbox_projection_position{projection=\"balances\"}") == 40);
    CHECK(prometheus_sample(text, "letterbox_projection_lag_events{projection=\"balances\"}") == 5);
    CHECK(prometheus_sample(text, "letterbox_projection_lag_seconds{projection=\"balances\"}") ==
          1.5);
    runner.fail = letterbox::errc::store_busy;
    CHECK(reg.render().find("letterbox_projection_position{projection=\"balances\"} NaN") !=
          std::string::npos);

    const letterbox::store_time at{std::chrono::sys_days{std::chrono::year{2026} / 12 / 1}};
    std::vector<letterbox::recorded_event> events(3);
    events[0].recorded_at = at - 3ms;
    events[1].recorded_at = at - 20ms;
    events[2].recorded_at = at;
    metrics.projection_observer()({"balances", events, at});
    text = reg.render();
    CHECK(prometheus_sample(text, "letterbox_projection_applied_total{projection=\"balances\"}") ==
          3);
    CHECK(prometheus_sample(
              text,
              "letterbox_projection_consistency_lag_seconds_count{projection=\"balances\"}") == 3);
    CHECK(prometheus_sample(text, "letterbox_projection_consistency_lag_seconds_bucket{projection="
                                  "\"balances\",le=\"0.005\"}") == 2);
}

TEST_CASE("letterbox_metrics: the dead-letter depth is a gauge, and its alert fires above the "
          "threshold",
          "[ops][metrics][dlq]") {
    dlq_test::world w;
    letterbox::ops::metrics_registry reg;
    letterbox::ops::letterbox_metrics metrics(reg);
    std::vector<std::pair<bool, std::uint32_t>> alerts;
    letterbox::dlq::depth_gauge_options o;
    o.interval = std::chrono::seconds(15);
    o.threshold = 3;
    o.on_threshold = [&](bool above, std::uint32_t depth) {
        alerts.emplace_back(above, depth);
    };
    letterbox::dlq::depth_gauge<letterbox::in_memory::transport, letterbox::virtual_clock> gauge(
        w.transport, w.clock, dlq_test::dlq_name, o);
    metrics.watch_dead_letter_queue(dlq_test::dlq_name, [&] { return gauge.value(); });
    const std::string series =
        "letterbox_dlq_depth{queue=\"" + std::string(dlq_test::dlq_name) + "\"}";
    CHECK(reg.render().find("\n" + series + " NaN\n") != std::string::npos); // not polled yet

    gauge.start();
    w.run_for(std::chrono::seconds(1));
    CHECK(prometheus_sample(reg.render(), series) == 0);
    w.dead_letter_explicitly();
    w.dead_letter_natively();
    w.run_for(std::chrono::seconds(15));
    CHECK(prometheus_sample(reg.render(), series) == 2);
    CHECK(alerts.empty()); // below the threshold

    w.dead_letter_explicitly();
    w.dead_letter_natively();
    w.run_for(std::chrono::seconds(15));
    CHECK(prometheus_sample(reg.render(), series) == 4);
    REQUIRE(alerts.size() == 1);
    CHECK(alerts[0] == std::pair<bool, std::uint32_t>{true, 4});
    gauge.stop();
}

} // namespace unit_ops_letterbox_metrics
