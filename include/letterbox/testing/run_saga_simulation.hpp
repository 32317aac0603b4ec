// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/saga_world.hpp>
#include <letterbox/testing/saga_simulation_options.hpp>
#include <letterbox/testing/saga_simulation_result.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Runs an orchestrated saga once, in a `simulation` seeded with `seed`, under faults, and
/// checks the saga invariants (S-01 to S-04, `check_saga_history`) over what happened.
///
/// The run: `options.sagas` orders start at seeded times, each an instance of a saga of 2 to 4
/// steps (`reserve-stock`, `charge-payment`, `book-shipping`, `notify-customer`), each step
/// owned by a participant service with a compensation. The orchestrator service and each
/// participant have their own in-memory outbox, inbox, relay and consumer on the in-memory
/// broker; each move of the saga, and each participant's effect with its reply, is one
/// transaction with the inbox record of the message that caused it. The participants follow
/// the rules docs/sagas.md asks of them: a compensation of a step never done undoes nothing,
/// and a command that comes after its compensation is refused. Meanwhile the faults of
/// `options.faults` (by default `saga_fault_profile::from_seed(seed)`) happen: declined steps,
/// transient failures, crashes before a commit (participants' and the orchestrator's),
/// participant outages (steps time out while their commands wait), connection drops, lost
/// confirms and duplicate publishes. After every saga ended, the run goes on for
/// `options.quiet` of virtual time, so that late commands are handled, then stops and checks.
///
/// The same seed and options give the same history (compare `trace_hash()`).
inline saga_simulation_result run_saga_simulation(std::uint64_t seed,
                                                  const saga_simulation_options& options = {}) {
    detail::saga_world world(seed, options);
    return world.run();
}

} // namespace letterbox::testing
