// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/outbox/relay_options.hpp>
#include <letterbox/testing/simulation.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// The options of a relay in a simulated run, named `owner`: small batches and windows, so that
/// faults land between its steps; short delays, so that a run settles in little virtual time;
/// a refused publish retried, never parked; no purge; its jitter seeded from the simulation.
inline relay_options simulated_relay_options(const simulation& sim, std::string owner) {
    relay_options o;
    o.batch_size = 8;
    o.window = 4;
    o.lease = std::chrono::seconds(2);
    o.poll_interval = std::chrono::milliseconds(500);
    o.row_retry = {std::chrono::milliseconds(100), 2.0, std::chrono::seconds(2), 0.0};
    o.transport_retry = {std::chrono::milliseconds(50), 2.0, std::chrono::seconds(1), 0.2};
    o.max_attempts = 1000;
    o.retention = std::nullopt;
    o.seed = sim.derive(owner);
    o.owner = std::move(owner);
    return o;
}

} // namespace letterbox::testing::detail
