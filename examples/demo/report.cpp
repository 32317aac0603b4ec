// SPDX-License-Identifier: BSL-1.0
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace demo {

namespace {

std::string join(const std::set<std::size_t>& s) {
    std::string out;
    for (auto n : s)
        out += (out.empty() ? "" : ", ") + std::to_string(n);
    return out;
}

const consumer_outcome* find(const run_result& r, const char* id) {
    for (const auto& c : r.consumers)
        if (c.id == id)
            return &c;
    return nullptr;
}

std::string cell(std::size_t v) {
    return std::to_string(v);
}

void row(const char* label, const std::string& naive, const std::string& reliable) {
    std::printf("  %-44s %10s %12s\n", label, naive.c_str(), reliable.c_str());
}

} // namespace

std::size_t run_result::lost() const {
    std::size_t n = 0;
    for (const auto& c : consumers)
        n += c.lost;
    return n;
}

std::size_t run_result::duplicate_effects() const {
    std::size_t n = 0;
    for (const auto& c : consumers)
        n += c.duplicate_effects;
    return n;
}

std::size_t run_result::absorbed() const {
    std::size_t n = 0;
    for (const auto& c : consumers)
        n += c.absorbed;
    return n;
}

void print_plan(const fault_plan& p) {
    std::printf("the night: %zu enrollments over HTTP, one every %d ms, and what goes wrong:\n",
                p.enrollments, p.interval_ms);
    std::printf("  - cluster failover: the broker is unreachable while enrollments %zu-%zu are "
                "confirmed\n",
                p.outage_first, p.outage_last);
    std::printf("  - the service's process dies right after committing enrollments %s\n",
                join(p.crashes).c_str());
    std::printf("  - the broker stores the events of enrollments %s, but their confirms are lost\n",
                join(p.lost_confirms).c_str());
    std::printf("  - a canary release writes enrollment %zu's event with `amount_cents` instead "
                "of `price_cents`\n",
                p.poison);
    std::printf("  - the e-mail provider answers 503 %u times for enrollments %s\n",
                p.email_failures, join(p.email_hiccups).c_str());
}

void print_night(const run_result& r) {
    std::printf("enrollment service: %zu enrollments committed; %zu students saw \"confirmed\", "
                "%zu got no answer (the process died)\n",
                r.committed, r.confirmed, r.no_answer);
    if (!r.letterbox) {
        std::printf("publishing: %zu events failed 3 times and were given up (logged), %zu "
                    "never published (process died), %llu published twice (confirm lost, "
                    "retried)\n",
                    r.publish_failures, r.crashes,
                    static_cast<unsigned long long>(r.confirms_lost));
    } else {
        std::printf("relay: %llu events published by %zu relay processes (%zu died); %llu "
                    "publish attempts, %llu transport failures, %llu confirms lost\n",
                    static_cast<unsigned long long>(r.relay.published), r.crashes + 1, r.crashes,
                    static_cast<unsigned long long>(r.relay.publish_attempts),
                    static_cast<unsigned long long>(r.relay.transport_failures),
                    static_cast<unsigned long long>(r.confirms_lost));
    }
    for (const auto& c : r.consumers) {
        std::printf("%-14s %s for %zu enrollments; lost %zu; duplicate effects %zu", c.id.c_str(),
                    c.effect.c_str(), c.with_effect, c.lost, c.duplicate_effects);
        if (r.letterbox)
            std::printf("; duplicates absorbed by the inbox %zu; dead-lettered %zu; retried via "
                        "the broker %llu",
                        c.absorbed, c.in_dlq, static_cast<unsigned long long>(c.redelivered));
        else
            std::printf("; failed deliveries dropped %zu", c.dropped);
        std::printf("\n");
    }
    if (!r.letterbox && !r.access_denied.empty()) {
        std::string ids;
        for (std::size_t i = 0; i < r.access_denied.size() && i < 8; ++i)
            ids += (i ? ", " : "") + std::to_string(r.access_denied[i]);
        std::printf("students who paid and get \"access denied\": %zu (enrollments %s%s)\n",
                    r.access_denied.size(), ids.c_str(), r.access_denied.size() > 8 ? ", ..." : "");
    }
    std::printf("took %.1f s\n", r.seconds);
}

void print_lag_chart(const run_result& r) {
    if (r.lag.empty())
        return;
    constexpr std::size_t width = 64;
    constexpr int height = 6;
    const double span = std::max(r.lag.back().t, 0.001);
    const double column = span / width; // seconds per column
    // The highest sample of each column; a column between two samples (columns may be
    // narrower than the sampling interval) shows the value sampled before it.
    std::vector<double> peak(width, -1.0);
    for (const auto& s : r.lag) {
        auto c = std::min(width - 1, static_cast<std::size_t>(s.t / column));
        peak[c] = std::max(peak[c], s.lag_ms);
    }
    double last = 0;
    for (auto& v : peak)
        last = v = v < 0 ? last : v;
    const double top = *std::max_element(peak.begin(), peak.end());
    std::printf("relay lag: age of the oldest unpublished event; max %.0f ms, one column = %.0f "
                "ms\n",
                top, column * 1000);
    for (int level = height; level >= 1; --level) {
        const double threshold = top * (level - 0.5) / height;
        std::string line;
        for (double v : peak)
            line += top > 0 && v >= threshold ? '#' : ' ';
        if (level == height)
            std::printf("%6.0f ms |%s\n", top, line.c_str());
        else
            std::printf("          |%s\n", line.c_str());
    }
    std::printf("     0 ms +%s\n", std::string(width, '-').c_str());
    std::string marks(width, ' ');
    for (const auto& m : r.markers) {
        auto c = std::min(width - 1, static_cast<std::size_t>(m.t / column));
        marks[c] = m.symbol;
    }
    std::printf("           %s\n", marks.c_str());
    std::printf("           0 s%*s%.1f s\n", static_cast<int>(width) - 6, "", span);
    std::printf("           D broker unreachable, U broker back, X the service's process died, L a "
                "confirm lost\n");
}

void print_dead_letters(const run_result& r) {
    for (const auto& d : r.dead_letters) {
        std::printf("dead-letter queue %s: enrollment %lld, reason=%s, attempts=%u\n",
                    d.queue.c_str(), static_cast<long long>(d.enrollment), d.reason.c_str(),
                    d.attempts);
        std::printf("  exception: %s: %s\n", d.exception_type.c_str(), d.exception_message.c_str());
    }
}

void print_side_by_side(const run_result& naive, const run_result& reliable) {
    const char* rule = "======================================================================";
    std::printf("%s\n", rule);
    std::printf("  %-44s %10s %12s\n", "the same night, twice", "naive", "letterbox");
    std::printf("%s\n", rule);
    row("enrollments committed", cell(naive.committed), cell(reliable.committed));
    row("students who saw \"confirmed\"", cell(naive.confirmed), cell(reliable.confirmed));
    const char* ids[] = {"course-access", "invoicing", "email"};
    for (const char* id : ids) {
        const auto* n = find(naive, id);
        const auto* l = find(reliable, id);
        if (!n || !l)
            continue;
        row(n->effect.c_str(), cell(n->with_effect), cell(l->with_effect));
    }
    for (const char* id : ids) {
        const auto* n = find(naive, id);
        const auto* l = find(reliable, id);
        if (!n || !l)
            continue;
        const std::string label = "events lost: " + n->id;
        row(label.c_str(), cell(n->lost), cell(l->lost));
    }
    row("students told \"access denied\"", cell(naive.access_denied.size()),
        cell(reliable.access_denied.size()));
    row("duplicate effects (two notas fiscais, ...)", cell(naive.duplicate_effects()),
        cell(reliable.duplicate_effects()));
    row("duplicates absorbed by the inboxes", "-", cell(reliable.absorbed()));
    std::size_t dead = 0;
    for (const auto& c : reliable.consumers)
        dead += c.in_dlq;
    std::size_t dropped = 0;
    for (const auto& c : naive.consumers)
        dropped += c.dropped;
    row("failed deliveries dropped silently", cell(dropped), "0");
    row("dead-lettered, with a reason (replayable)", "-", cell(dead));
    double peak = 0;
    for (const auto& s : reliable.lag)
        peak = std::max(peak, s.lag_ms);
    char lag[32];
    std::snprintf(lag, sizeof lag, "%.0f ms", peak);
    row("relay lag, max", "-", lag);
    std::printf("%s\n", rule);
}

} // namespace demo
