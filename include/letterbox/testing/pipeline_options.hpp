// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/consumer_event.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox/relay_event.hpp>
#include <letterbox/testing/fault_profile.hpp>
#include <letterbox/testing/fault_schedule.hpp>
#include <letterbox/testing/pipeline_defect.hpp>
#include <letterbox/testing/pipeline_topology.hpp>
#include <letterbox/testing/seed.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// The shape of one simulated pipeline run (`run_pipeline`, `check_pipeline`): how much work,
/// over how long, under which faults.
struct pipeline_options {
    /// Business transactions written by the producer, each emitting one message.
    std::size_t messages = 24;
    /// Messages are spread over this many aggregates (ordering keys), round robin.
    std::size_t aggregates = 4;
    /// The chance that a business transaction rolls back instead of committing (its message
    /// must then never be observed).
    double rollback_rate = 0.1;
    /// The producer writes within this window of virtual time; faults are injected within
    /// `fault_window`, which starts at the same time.
    std::chrono::milliseconds write_window{3000};
    std::chrono::milliseconds fault_window{4000};
    /// After the faults stop, everything must settle within this much virtual time
    /// (convergence, I-18); the run gives up after twice as long.
    std::chrono::milliseconds settle_within{std::chrono::minutes(2)};
    /// The consumer's prefetch: deliveries it may hold unacknowledged.
    std::uint16_t prefetch = 4;
    /// Attempts per message before the consumer dead-letters it (the redelivery policy's
    /// max_attempts; each attempt also retries once in process).
    std::uint32_t max_attempts = 4;
    /// The faults; by default drawn from each run's seed (`fault_profile::from_seed`).
    std::optional<fault_profile> faults{};
    /// The timed faults; by default drawn from `faults` (`fault_profile::schedule`). Set it to
    /// replay a schedule a report printed, or to run one RapidCheck generated.
    std::optional<fault_schedule> schedule{};
    /// The consumers: how many consumer ids read the events (a fan-out), and how many
    /// processes compete on each one's queue; by default drawn from each run's seed
    /// (`pipeline_topology::from_seed`). `pipeline_topology::single()` for one process of one
    /// consumer.
    std::optional<pipeline_topology> topology{};
    /// Group commit in every consumer process: at most this many deliveries per commit
    /// (`consumer_options::group_commit`, a batch committed 5 ms of virtual time after its
    /// first delivery at the latest), and at most the prefetch; 0 or 1 for one commit per
    /// delivery. By default drawn from each run's seed (`group_commit_from_seed`): on, in
    /// batches of up to the prefetch, in half the runs.
    std::optional<std::size_t> group_commit{};
    /// Message groups in every consumer process (`consumer_options::groups`): the events of one
    /// aggregate, named by the relay's `x-letterbox-group` header, handled one at a time in
    /// strict order (`group_order::strict`), so that per-aggregate order is checked for every
    /// aggregate of a consumer with one process, failed messages included. By default drawn
    /// from each run's seed (`message_groups_from_seed`): on in half the runs.
    std::optional<bool> message_groups{};
    /// Where each run makes its temporary directory (the application's files). Empty: the
    /// directory in `LETTERBOX_SIMULATION_DIR` if set, else `/dev/shm` when it exists, else the
    /// system's temporary directory. A simulated crash is a process crash, not a power loss, so
    /// files in memory model it faithfully, and runs are several times faster than on a disk
    /// (SQLite syncs when it creates a database).
    std::filesystem::path directory{};
    /// For the self-test only: a deliberately broken variant (`pipeline_defect`).
    pipeline_defect defect = pipeline_defect::none;
    /// Observers of the pipeline's relay, consumer and inbox, for metrics (they never change
    /// the run): passed to `relay_options::on_event`, `consumer_options::on_event` and
    /// `idempotent_handler::on_duplicate` of every relay and consumer process the run starts.
    std::function<void(const relay_event&)> on_relay_event{};
    std::function<void(const consumer_event&)> on_consumer_event{};
    std::function<void(const message&)> on_duplicate{};
};

/// The group commit a run draws from `seed` when `pipeline_options::group_commit` leaves it
/// open: up to `prefetch` deliveries per commit in half the runs, else one per delivery (0).
inline std::size_t group_commit_from_seed(std::uint64_t seed, std::uint16_t prefetch) {
    std::mt19937_64 rng(derive_seed(seed, "group_commit"));
    return rng() % 2 == 0 ? std::size_t{prefetch} : std::size_t{0};
}

/// Whether a run draws message groups from `seed` when `pipeline_options::message_groups`
/// leaves it open: in half the runs.
inline bool message_groups_from_seed(std::uint64_t seed) {
    std::mt19937_64 rng(derive_seed(seed, "message_groups"));
    return rng() % 2 == 0;
}

/// The directory a run makes its temporary directory in (see `pipeline_options::directory`).
inline std::filesystem::path simulation_directory(const pipeline_options& o) {
    if (!o.directory.empty())
        return o.directory;
    if (const char* dir = std::getenv("LETTERBOX_SIMULATION_DIR"); dir != nullptr && *dir != '\0')
        return dir;
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec))
        return "/dev/shm";
    return std::filesystem::temp_directory_path();
}

} // namespace letterbox::testing
