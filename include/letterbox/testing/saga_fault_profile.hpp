// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/swarm_draws.hpp>
#include <letterbox/testing/seed.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Which faults a simulated saga run (`run_saga_simulation`) injects, and how often. As with
/// `fault_profile`, `from_seed` switches each kind on in about half of the runs and draws its
/// rate, so that runs explore different regimes; a failure prints the profile in full.
///
/// Rates are probabilities per occasion (per handling of a delivery); counts are faults at
/// seeded times within the run's window.
struct saga_fault_profile {
    /// A participant declines a step (a business failure: out of stock, card declined), drawn
    /// once per saga and step.
    double decline_rate = 0.0;
    /// A delivery's handling fails once, retryably, before it does anything.
    double transient_rate = 0.0;
    /// A participant dies after its effect, its reply and its inbox record were written, before
    /// its commit: the transaction rolls back, and the command is handled again.
    double participant_crash_rate = 0.0;
    /// The orchestrator dies after a move was written (the instance, its commands, the reply's
    /// inbox record), before its commit: the move rolls back, and the reply is handled again.
    double orchestrator_crash_rate = 0.0;
    /// A participant stops consuming for `outage_length`: the steps it owes time out, and their
    /// commands wait in its queue.
    std::uint32_t outages = 0;
    std::chrono::milliseconds outage_length{0};
    /// Every client connection drops: unacknowledged deliveries return to their queues, and
    /// publishes awaiting their confirm are published again.
    std::uint32_t connection_drops = 0;
    /// A publish is stored but its confirm is lost: the relay publishes it again.
    std::uint32_t lost_confirms = 0;
    /// A message already published (a command or a reply) is published once more, with its id.
    std::uint32_t duplicate_publishes = 0;

    /// No fault at all.
    static saga_fault_profile none() { return {}; }

    /// A profile drawn from `seed`.
    static saga_fault_profile from_seed(std::uint64_t seed) {
        detail::swarm_draws d(derive_seed(seed, "saga_fault_profile"));
        saga_fault_profile p;
        p.decline_rate = d.chance(0.1, 0.5);
        p.transient_rate = d.chance(0.05, 0.3);
        p.participant_crash_rate = d.chance(0.05, 0.3);
        p.orchestrator_crash_rate = d.chance(0.05, 0.3);
        p.outages = d.count(2);
        p.outage_length = std::chrono::milliseconds(200 + d.next() % 1801);
        p.connection_drops = d.count(2);
        p.lost_confirms = d.count(3);
        p.duplicate_publishes = d.count(4);
        return p;
    }

    /// Every field, one `name=value` per line.
    std::string to_string() const {
        std::string out;
        const auto line = [&out](const char* name, const std::string& value) {
            out += "  ";
            out += name;
            out += '=';
            out += value;
            out += '\n';
        };
        const auto rate = [](double r) {
            char text[32];
            std::snprintf(text, sizeof text, "%.3f", r);
            return std::string(text);
        };
        line("decline_rate", rate(decline_rate));
        line("transient_rate", rate(transient_rate));
        line("participant_crash_rate", rate(participant_crash_rate));
        line("orchestrator_crash_rate", rate(orchestrator_crash_rate));
        line("outages", std::to_string(outages));
        line("outage_length", std::to_string(outage_length.count()) + "ms");
        line("connection_drops", std::to_string(connection_drops));
        line("lost_confirms", std::to_string(lost_confirms));
        line("duplicate_publishes", std::to_string(duplicate_publishes));
        return out;
    }

    friend bool operator==(const saga_fault_profile&, const saga_fault_profile&) = default;
};

} // namespace letterbox::testing
