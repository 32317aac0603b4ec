// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/testing/detail/swarm_draws.hpp>
#include <letterbox/testing/fault_schedule.hpp>
#include <letterbox/testing/history_event.hpp>
#include <letterbox/testing/seed.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Which faults a simulated run injects, and how often: the fault catalogue of
/// reliability-anchors C2 as numbers. `check_pipeline` draws one per seed with `from_seed`
/// (swarm testing, REPRO-02: the seed picks which faults are on *and* their rates, so runs
/// explore different regimes instead of one average mix) and prints it in full with any
/// failure, so the run can be read and replayed.
///
/// Counts are faults injected at seeded times within the run's fault window; rates are
/// probabilities per occasion (per delivery, per pass through a failpoint).
struct fault_profile {
    /// F-02: every client connection drops (`broker::sever_all`): unacked deliveries return,
    /// publishes awaiting their confirm have an unknown outcome.
    std::uint32_t connection_drops = 0;
    /// F-03: the broker restarts (`broker::restart`): connections drop; durable queues and
    /// persistent messages survive.
    std::uint32_t broker_restarts = 0;
    /// F-19: a publish is stored but its confirm is lost (`broker::lose_nth_confirm`).
    std::uint32_t lost_confirms = 0;
    /// F-12: the broker refuses a publish (`broker::nack_nth_publish`).
    std::uint32_t publish_nacks = 0;
    /// F-07: an already published message is published once more, with the same id.
    std::uint32_t duplicate_deliveries = 0;
    /// F-09: the chance that a delivery's handling fails once, retryably.
    double handler_transient_rate = 0.0;
    /// F-09: messages whose handler fails for good (a permanent error: dead-lettered at once).
    std::uint32_t handler_permanent_failures = 0;
    /// F-10: one message whose handler always fails, retryably (it must end in the
    /// dead-letter queue without holding the others up).
    bool poison_message = false;
    /// F-11: periods in which the consumer is slow: each delivery reaches the handler only
    /// after `slow_consumer_delay`, while the broker holds it unacknowledged.
    std::uint32_t slow_consumer_periods = 0;
    std::chrono::milliseconds slow_consumer_delay{0};
    /// F-20: the consumer cancels its subscription mid-stream and subscribes again later.
    std::uint32_t consumer_cancels = 0;
    /// F-17: periods in which the consumer's store is locked by another writer, so its calls
    /// fail with `errc::store_busy` (what the SQLite stores report for SQLITE_BUSY).
    std::uint32_t sqlite_busy_periods = 0;
    std::chrono::milliseconds sqlite_busy_length{0};
    /// F-21: periods in which every binding of the run's exchange is removed, then restored
    /// after `unroutable_length`: each publish meanwhile comes back unroutable
    /// (`basic.return`), and the relay must keep its row and publish it again.
    std::uint32_t binding_removals = 0;
    /// F-21: periods in which every work queue is deleted, then declared, bound and consumed
    /// again after `unroutable_length`. The queues are deleted only once they hold nothing
    /// (see `fault_kind::queue_deleted` and docs/testing.md): publishes meanwhile are
    /// unroutable, and the consumers are cancelled by the broker.
    std::uint32_t queue_deletions = 0;
    std::chrono::milliseconds unroutable_length{0};
    /// F-04, F-05: for each `failpoint` (indexed by its value), the chance that a pass through
    /// it kills the process there (0: the point is inactive).
    std::array<double, all_failpoints.size()> failpoint_rate{};
    /// At most this many failpoint crashes per run, so that a run always makes progress.
    std::uint32_t max_crashes = 4;

    /// No fault at all.
    static fault_profile none() { return {}; }

    /// A profile drawn from `seed`: each fault kind is switched on with probability 1/2, and
    /// its count or rate is drawn too (FoundationDB's BUGGIFY: a failpoint is active in half
    /// of the runs, and then fires with a probability drawn between 5 % and 50 %).
    static fault_profile from_seed(std::uint64_t seed) {
        detail::swarm_draws d(derive_seed(seed, "fault_profile"));
        fault_profile p;
        p.connection_drops = d.count(3);
        p.broker_restarts = d.count(2);
        p.lost_confirms = d.count(3);
        p.publish_nacks = d.count(3);
        p.duplicate_deliveries = d.count(4);
        p.handler_transient_rate = d.chance(0.05, 0.3);
        p.handler_permanent_failures = d.count(2);
        p.poison_message = d.on();
        p.slow_consumer_periods = d.count(2);
        p.slow_consumer_delay = std::chrono::milliseconds(50 + d.next() % 451);
        p.consumer_cancels = d.count(2);
        p.sqlite_busy_periods = d.count(2);
        p.sqlite_busy_length = std::chrono::milliseconds(20 + d.next() % 281);
        for (auto& rate : p.failpoint_rate)
            rate = d.chance(0.05, 0.5);
        // Drawn last, so that the draws above (and the profiles of older seeds) stay the same.
        p.binding_removals = d.count(2);
        p.queue_deletions = d.count(2);
        p.unroutable_length = std::chrono::milliseconds(100 + d.next() % 901);
        return p;
    }

    /// The timed faults of one run: each count above becomes that many commands at instants
    /// drawn from `seed` within `[0, window)`, in time order. (Handler failures, the poison
    /// message and the failpoint rates are not timed: the run applies them as it goes.)
    fault_schedule schedule(std::uint64_t seed, std::chrono::milliseconds window) const {
        std::mt19937_64 rng(derive_seed(seed, "fault_schedule"));
        const auto span = static_cast<std::uint64_t>(std::max<std::int64_t>(window.count(), 1));
        fault_schedule s;
        const auto add = [&](std::uint32_t n, fault_kind kind, auto arg) {
            for (std::uint32_t i = 0; i < n; ++i) {
                const auto at = std::chrono::milliseconds(static_cast<std::int64_t>(rng() % span));
                s.commands.push_back({at, kind, static_cast<std::uint32_t>(arg())});
            }
        };
        const auto none = [] {
            return 0;
        };
        add(connection_drops, fault_kind::connection_drop, none);
        add(broker_restarts, fault_kind::broker_restart, none);
        add(lost_confirms, fault_kind::lost_confirm, [&rng] { return 1 + rng() % 3; });
        add(publish_nacks, fault_kind::publish_nack, [&rng] { return 1 + rng() % 3; });
        add(duplicate_deliveries, fault_kind::duplicate_delivery, [&rng] { return rng() % 1000; });
        add(slow_consumer_periods, fault_kind::slow_consumer,
            [this] { return slow_consumer_delay.count(); });
        add(consumer_cancels, fault_kind::consumer_cancel, [&rng] { return 100 + rng() % 900; });
        add(sqlite_busy_periods, fault_kind::sqlite_busy,
            [this] { return sqlite_busy_length.count(); });
        add(binding_removals, fault_kind::binding_removed,
            [this] { return unroutable_length.count(); });
        add(queue_deletions, fault_kind::queue_deleted,
            [this] { return unroutable_length.count(); });
        std::stable_sort(
            s.commands.begin(), s.commands.end(),
            [](const fault_command& a, const fault_command& b) { return a.at < b.at; });
        return s;
    }

    /// The chance that a pass through `p` kills the process there (0 for a failpoint outside
    /// the pipeline's, such as a projection's).
    double rate(failpoint p) const noexcept {
        const auto i = static_cast<std::size_t>(p);
        return i < failpoint_rate.size() ? failpoint_rate[i] : 0.0;
    }

    /// Every field, one `name=value` per line, failpoints by name.
    std::string to_string() const {
        std::string out;
        const auto line = [&out](const char* name, const std::string& value) {
            out += "  ";
            out += name;
            out += '=';
            out += value;
            out += '\n';
        };
        const auto num = [](auto v) {
            return std::to_string(v);
        };
        const auto real = [](double v) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.3f", v);
            return std::string(buf);
        };
        const auto ms = [](std::chrono::milliseconds d) {
            return std::to_string(d.count()) + "ms";
        };
        line("connection_drops", num(connection_drops));
        line("broker_restarts", num(broker_restarts));
        line("lost_confirms", num(lost_confirms));
        line("publish_nacks", num(publish_nacks));
        line("duplicate_deliveries", num(duplicate_deliveries));
        line("handler_transient_rate", real(handler_transient_rate));
        line("handler_permanent_failures", num(handler_permanent_failures));
        line("poison_message", poison_message ? "true" : "false");
        line("slow_consumer_periods", num(slow_consumer_periods));
        line("slow_consumer_delay", ms(slow_consumer_delay));
        line("consumer_cancels", num(consumer_cancels));
        line("sqlite_busy_periods", num(sqlite_busy_periods));
        line("sqlite_busy_length", ms(sqlite_busy_length));
        line("binding_removals", num(binding_removals));
        line("queue_deletions", num(queue_deletions));
        line("unroutable_length", ms(unroutable_length));
        for (const auto p : all_failpoints) {
            const std::string name = "failpoint." + std::string(letterbox::to_string(p));
            line(name.c_str(), real(rate(p)));
        }
        line("max_crashes", num(max_crashes));
        return out;
    }

    friend bool operator==(const fault_profile&, const fault_profile&) = default;
};

} // namespace letterbox::testing
