// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/saga_defect.hpp>
#include <letterbox/testing/saga_fault_profile.hpp>

#include <chrono>
#include <cstddef>
#include <optional>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// The shape of a simulated saga run (`run_saga_simulation`). What is left empty is drawn
/// from the run's seed.
struct saga_simulation_options {
    /// Sagas started, at seeded times within `window`.
    std::size_t sagas = 6;
    /// Steps of the saga, each owned by a participant of its own, each with a compensation:
    /// 2 to 4 when empty.
    std::optional<std::size_t> steps{};
    /// The sagas start, and the timed faults happen, within this window of virtual time.
    std::chrono::milliseconds window{std::chrono::seconds(2)};
    /// Each step's timeout (and its compensation's).
    std::chrono::milliseconds step_timeout{400};
    /// How often the orchestrator fires its due timeouts.
    std::chrono::milliseconds timeout_tick{50};
    /// After the window, every saga must end within this much virtual time; the run then goes
    /// on for `quiet` more, so that late commands are handled before the check.
    std::chrono::milliseconds settle_within{std::chrono::seconds(60)};
    std::chrono::milliseconds quiet{std::chrono::seconds(10)};
    /// The faults; `saga_fault_profile::from_seed(seed)` when empty.
    std::optional<saga_fault_profile> faults{};
    /// A broken participant, for the self-test.
    saga_defect defect = saga_defect::none;
};

} // namespace letterbox::testing
