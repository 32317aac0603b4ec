// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>

#include <chrono>
#include <cstddef>
#include <functional>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

/// Options of a `dead_letter_queue`.
struct dead_letter_queue_options {
    /// The most messages one operation fetches (each held unacknowledged until the operation
    /// ends). An operation also never fetches more than the queue's depth measured when it
    /// started. Must be at least 1.
    std::size_t max_messages = 10000;

    /// Failpoint for tests (`failpoint::between_republish_and_remove`; compiled in only with
    /// `LETTERBOX_FAILPOINTS`, see failpoint.hpp): called by a replay after the republished copy
    /// was confirmed and before the dead-lettered original is acknowledged (removed). If it throws,
    /// the replay stops at once, as if the process died there: nothing more is settled, every
    /// delivery the replay holds stays unacknowledged (the transport returns them to the queue when
    /// its channel or connection closes), and the replay completes with `errc::internal_error`.
    std::function<void(const dead_letter_entry&)> after_republish_before_remove{};

    /// The wall clock that stamps `x-letterbox-replayed-time`; when empty, the real one
    /// (`letterbox::steady_clock::wall_now`). With a clock model `c`:
    /// `[&c] { return c.wall_now(); }`.
    std::function<std::chrono::system_clock::time_point()> wall_clock{};
};

} // namespace letterbox::dlq
