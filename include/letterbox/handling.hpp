// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

struct handler_failure;

} // namespace letterbox::middleware

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {
class commit_group;
} // namespace letterbox

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// One run of a pipeline over one delivery.
struct handling {
    /// The delivery being handled: its message, queue and redelivered flag.
    const delivery& d;
    /// 1 on the first run of this delivery; the consumer runs it again with `run + 1` after
    /// a `disposition::retry_in` (in-process retry with a delay).
    std::uint32_t run = 1;
    /// Told, by a layer that runs its inner handler again at once within this run (an
    /// immediate in-process retry), what failed and which run comes next, before that run.
    /// The consumer counts these as `consumer_stats::retried` and reports each as a
    /// `consumer_event::kind::retried` with its reason. Null when nobody listens. A layer that
    /// builds a `handling` of its own for its inner handler passes both fields on.
    void (*on_rerun)(void* context, const handler_failure& why, std::uint32_t next_run) = nullptr;
    /// What `on_rerun` is called with.
    void* on_rerun_context = nullptr;
    /// The group commit this delivery belongs to (`consumer_options::group_commit`): a
    /// transactional handler (`idempotent`) stages its writes in the group's shared unit of
    /// work, which the consumer commits for the whole batch before acknowledging. Null: the
    /// handler commits on its own.
    commit_group* group = nullptr;

    /// This handling for run `r`: the same delivery, told to the same listener, in the same
    /// group.
    handling with_run(std::uint32_t r) const {
        return handling{d, r, on_rerun, on_rerun_context, group};
    }

    /// Calls `on_rerun`, if any.
    void rerun(const handler_failure& why, std::uint32_t next_run) const {
        if (on_rerun)
            on_rerun(on_rerun_context, why, next_run);
    }
};

} // namespace letterbox::middleware
