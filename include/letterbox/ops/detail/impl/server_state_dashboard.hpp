// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of server_state (included by server_state.hpp when header-only, by
// <letterbox/ops/src.hpp> under LETTERBOX_SEPARATE_COMPILATION): what the dashboard's panels
// read besides the dead-letter and outbox routes. The samples of the relay's lag and of the
// consumers' delivery counts, taken on the strand every sample_interval; GET /outbox/lag,
// GET /consumers and GET /topology/findings.

#include <letterbox/config.hpp>
#include <letterbox/ops/detail/server_state.hpp>

#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/lint/severity.hpp>
#include <letterbox/ops/detail/route_support.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

namespace route {

/// Rates are per second over the last minute (or what the samples kept cover, if less).
inline constexpr std::chrono::seconds rate_window{60};

inline double to_seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

inline nlohmann::json to_json(const lint::finding& f) {
    return {{"severity", to_string(f.level)}, {"code", f.code}, {"objects", f.objects},
            {"versions", f.versions},         {"why", f.why},   {"fix", f.fix}};
}

} // namespace route

// ---- sampling ----------------------------------------------------------------------------

// A source that throws leaves its part of the sample empty: the sparkline shows a gap, the
// rate spans it.
LETTERBOX_DECL void server_state::sample() {
    if (stopped())
        return;
    dashboard_sample s;
    s.wall = std::chrono::system_clock::now();
    s.at = std::chrono::steady_clock::now();
    if (relay_) {
        try {
            s.lag_seconds = std::chrono::duration<double>(relay_().lag).count();
        } catch (...) {
        }
    }
    if (consumers_) {
        try {
            for (auto& c : consumers_())
                s.delivered.emplace_back(std::move(c.consumer), c.delivered);
        } catch (...) {
        }
    }
    samples_.push(std::move(s));
    schedule_sample();
}

LETTERBOX_DECL void server_state::schedule_sample() {
    sampler_.expires_after(options_.sample_interval);
    sampler_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec)
            self->sample();
    });
}

// ---- the routes --------------------------------------------------------------------------

LETTERBOX_DECL void server_state::get_relay_lag(const respond_fn& respond) const {
    if (!relay_)
        return respond(error_response(status::not_found, "no_relay",
                                      "no outbox relay is watched (http_server::watch_relay)"));
    relay_counters now;
    try {
        now = relay_();
    } catch (const std::exception& e) {
        return respond(
            error_response(status::internal_server_error, "relay_failed",
                           std::string("reading the relay's counters failed: ") + e.what()));
    } catch (...) {
        return respond(error_response(status::internal_server_error, "relay_failed",
                                      "reading the relay's counters failed"));
    }
    nlohmann::json samples = nlohmann::json::array();
    for (std::size_t i = 0; i < samples_.size(); ++i) {
        const auto& s = samples_[i];
        if (s.lag_seconds)
            samples.push_back({{"time", letterbox::detail::format_rfc3339(s.wall)},
                               {"lag_seconds", *s.lag_seconds}});
    }
    nlohmann::json body;
    body["lag_seconds"] = std::chrono::duration<double>(now.lag).count();
    body["published"] = now.published;
    body["failed"] = now.failed;
    body["parked"] = now.parked;
    body["in_flight"] = now.in_flight;
    body["interval_seconds"] = route::to_seconds(options_.sample_interval);
    body["samples"] = std::move(samples);
    respond(json_response(status::ok, body));
}

LETTERBOX_DECL void server_state::get_consumers(const respond_fn& respond) const {
    if (!consumers_)
        return respond(error_response(status::not_found, "no_consumer_metrics",
                                      "no consumer metrics are watched "
                                      "(http_server::watch_consumers)"));
    std::vector<consumer_counts> counts;
    try {
        counts = consumers_();
    } catch (const std::exception& e) {
        return respond(
            error_response(status::internal_server_error, "metrics_failed",
                           std::string("reading the consumer counts failed: ") + e.what()));
    } catch (...) {
        return respond(error_response(status::internal_server_error, "metrics_failed",
                                      "reading the consumer counts failed"));
    }
    const auto now = std::chrono::steady_clock::now();
    const auto* base = samples_.baseline(now, route::rate_window);
    nlohmann::json list = nlohmann::json::array();
    for (const auto& c : counts) {
        nlohmann::json rate = nullptr;
        if (base)
            if (const auto r = dashboard_samples::rate(*base, c.consumer, c.delivered, now))
                rate = *r;
        list.push_back({{"consumer", c.consumer},
                        {"delivered", c.delivered},
                        {"delivered_per_second", std::move(rate)},
                        {"acked", c.acked},
                        {"failed", c.failed},
                        {"rejected", c.rejected},
                        {"retried", c.retried},
                        {"redelivered", c.redelivered},
                        {"dead_lettered", c.dead_lettered},
                        {"forward_failed", c.forward_failed}});
    }
    nlohmann::json body;
    body["rate_window_seconds"] =
        base ? nlohmann::json(route::to_seconds(now - base->at)) : nullptr;
    body["consumers"] = std::move(list);
    respond(json_response(status::ok, body));
}

LETTERBOX_DECL void server_state::get_findings(const respond_fn& respond) {
    if (!findings_)
        return respond(error_response(status::not_found, "no_topology_check",
                                      "no topology check is configured "
                                      "(http_server::set_topology_check)"));
    if (budget_spent(respond))
        return;
    // The check's own failure is an answer (500 with its message), not a store failure.
    struct outcome {
        std::vector<lint::finding> findings;
        std::optional<std::string> error;
    };
    call_worker<outcome>(
        respond, "the topology check",
        "it may be waiting for a broker or a file; the page's Check again asks again",
        [check = findings_] {
            outcome o;
            try {
                o.findings = check();
            } catch (const std::exception& e) {
                o.error = e.what();
            } catch (...) {
                o.error = "unknown exception";
            }
            return o;
        },
        [self = shared_from_this(), respond](outcome o) {
            if (o.error)
                return respond(error_response(status::internal_server_error,
                                              "topology_check_failed",
                                              "the topology check failed: " + *o.error));
            nlohmann::json list = nlohmann::json::array();
            for (const auto& f : o.findings)
                list.push_back(route::to_json(f));
            self->respond_within_budget(respond,
                                        json_response(status::ok, {{"findings", std::move(list)}}));
        });
}

} // namespace letterbox::ops::detail
