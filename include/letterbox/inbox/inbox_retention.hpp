// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// How long an inbox store keeps its records, and how often it deletes older ones itself.
///
/// A store given a retention (`sqlite::inbox_store`, `in_memory_inbox_store`) reports it, so
/// that `middleware::compose` refuses a pipeline whose redelivery horizon is longer (a
/// redelivery after its record was purged would have its effect again; DESIGN §3.8, in
/// docs/design/). It also purges itself: `purge_expired(now, ec)`, which the idempotent
/// middleware calls before each unit of work, deletes the records older than `now - keep` at
/// most once per `purge_every` of store time, on the store's own connection, never inside the
/// caller's transaction.
///
/// The default keeps 7 days, as NServiceBus's outbox does: far longer than any sensible retry
/// schedule, and small for a table keyed by message.
struct inbox_retention {
    /// Records younger than this are kept. Greater than zero.
    std::chrono::milliseconds keep = std::chrono::hours(24 * 7);
    /// The store deletes expired records at most once per this much store time; the first
    /// call only starts the period. Zero purges on every call.
    std::chrono::milliseconds purge_every = std::chrono::hours(1);
};

} // namespace letterbox
