// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/seed.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Who consumes the events of a simulated pipeline run (`run_pipeline`): one or more consumers,
/// each with its own consumer id and its own work queue bound to the run's exchange, so that
/// every event reaches each of them (a fan-out); and on each queue one or more processes of
/// that consumer competing for its deliveries (competing consumers).
///
/// Every consumer has its own retry queues and dead-letter queue, and records what it handled
/// in the application's one inbox store under its own consumer id: each consumer must apply
/// each event once, whatever the others did. Consumer `0` is `"consumer"` on queue
/// `"sim.work"`, consumer `1` is `"consumer-b"` on `"sim.work-b"`, and so on.
///
/// `check_pipeline` draws one per seed (`from_seed`), as it draws the faults.
struct pipeline_topology {
    /// One entry per consumer: how many processes compete on its queue (at least 1). At most
    /// 26 consumers.
    std::vector<std::uint32_t> processes{1};

    /// One consumer, one process.
    static pipeline_topology single() { return {}; }

    /// A topology drawn from `seed`: one consumer in seven runs of eight, two or three in the
    /// others (a fan-out, with probability 1/16 each); each consumer has two competing
    /// processes with probability 1/4, else one. Each consumer handles every event, so a
    /// fan-out costs about as much again per consumer: the odds keep the tier's time close to
    /// one consumer's, and still give the PR tier's 2,000 seeds some 250 fan-outs.
    static pipeline_topology from_seed(std::uint64_t seed) {
        std::mt19937_64 rng(derive_seed(seed, "pipeline_topology"));
        pipeline_topology t;
        const std::size_t consumers = rng() % 8 != 0 ? 1 : 2 + rng() % 2;
        t.processes.assign(consumers, 1);
        for (auto& n : t.processes)
            n = rng() % 4 == 0 ? 2 : 1;
        return t;
    }

    /// How many consumers (consumer ids) read the events.
    std::size_t consumers() const noexcept { return processes.size(); }

    /// The consumer id of consumer `i`: `"consumer"`, then `"consumer-b"`, `"consumer-c"`...
    static std::string consumer_id(std::size_t i) {
        return i == 0 ? std::string("consumer") : "consumer-" + std::string(1, letter(i));
    }

    /// The work queue of consumer `i`: `"sim.work"`, then `"sim.work-b"`, `"sim.work-c"`...
    static std::string queue(std::size_t i) {
        return i == 0 ? std::string("sim.work") : "sim.work-" + std::string(1, letter(i));
    }

    /// One line: each consumer id with its number of processes, e.g.
    /// `consumer=1 consumer-b=2`.
    std::string to_string() const {
        std::string out;
        for (std::size_t i = 0; i < processes.size(); ++i) {
            if (i != 0)
                out += ' ';
            out += consumer_id(i) + '=' + std::to_string(processes[i]);
        }
        return out;
    }

    friend bool operator==(const pipeline_topology&, const pipeline_topology&) = default;

private:
    static char letter(std::size_t i) { return static_cast<char>('a' + i % 26); }
};

} // namespace letterbox::testing
