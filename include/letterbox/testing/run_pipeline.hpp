// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/pipeline_world.hpp>
#include <letterbox/testing/pipeline_application.hpp>
#include <letterbox/testing/pipeline_options.hpp>
#include <letterbox/testing/pipeline_result.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Runs the whole pipeline once, in a `simulation` seeded with `seed`, and checks it.
///
/// The run: a producer writes `options.messages` business transactions at seeded times, each
/// with `App::write` and an outbox row in one unit of work (some roll back); an
/// `outbox_relay` publishes them to the in-memory broker; a `consumer` applies them with
/// `App::handle` through `idempotent` (the inbox), `retry`, `redelivery` and `dead_letter`.
/// Meanwhile the faults of `options.faults` (by default `fault_profile::from_seed(seed)`) are
/// injected: connection drops, broker restarts, lost confirms, refused publishes, duplicate
/// publishes, handler failures, a poison message, slow periods, cancels, a locked store, and
/// process crashes at the failpoints. A crashed relay or consumer is restarted after a seeded
/// delay, as a supervisor would. After the fault window the run waits (in virtual time) for
/// everything to settle, stops, and runs the checkers over the recorded history: no loss, no
/// phantom, no duplicate effect, per-aggregate order (when promised), bounded redelivery,
/// poison isolation and convergence, plus the application's own effect count when `App` has
/// `effects(id)`.
///
/// The application's files live in a fresh temporary directory, removed afterwards. The same
/// seed and options give the same history (compare `trace_hash()`).
///
/// Requires `LETTERBOX_FAILPOINTS` (linking `letterbox::testing` defines it).
template <pipeline_application App>
pipeline_result run_pipeline(std::uint64_t seed, const pipeline_options& options = {}) {
    detail::pipeline_world<App> world(seed, options);
    return world.run();
}

} // namespace letterbox::testing
