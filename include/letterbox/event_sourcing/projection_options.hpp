// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/event_sourcing/projection_batch.hpp>
#include <letterbox/failpoint.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// How a `projection_runner` runs its projection.
struct projection_options {
    /// The projection's name: the key of its checkpoint. Required (not empty).
    std::string name{};

    /// How many events one unit of work applies, at most. At least 1.
    std::size_t batch = 100;

    /// `async_run` catches up when woken (`notify`), and also this long after its last round
    /// when nothing woke it: the fallback for appends that no one reports (another process
    /// without a bus). Zero: never, woken only.
    std::chrono::milliseconds fallback_poll{0};

    /// After a failed round (a locked database, a projection error), `async_run` tries again
    /// this long after, woken or not.
    std::chrono::milliseconds retry_delay{1000};

    /// Called after each committed batch, on the thread that committed it.
    std::function<void(const projection_batch&)> on_batch{};

    /// Crash injection, for tests (needs `LETTERBOX_FAILPOINTS`): asked at
    /// `failpoint::after_projection_apply_before_commit` and
    /// `failpoint::after_projection_commit_before_wake` with the batch's last event id; when it
    /// says true, the runner throws `failpoint_halt` there, as a process dying at that point
    /// would stop.
    failpoint_hook failpoint{};
};

} // namespace letterbox
