// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/store_time.hpp>

#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// An event-sourced aggregate as `aggregate_repository` loads it: its stream, its state, and
/// which event the state includes last.
///
/// - `version` and `recorded_at` are those of the last event the state includes (0 and the
///   epoch when the stream had none at the point loaded); `position` is that event's global
///   position when the load read it, 0 when the state came whole from a snapshot. An append
///   made from this aggregate expects the stream to be still at `version`.
/// - `snapshot_version` is the version of the snapshot the load started from (0: it folded from
///   the first event); `events_folded` how many events it read after it; `snapshot_ignored`
///   says it found a snapshot it could not use (taken by another fold version, or unreadable)
///   and folded from the events instead.
template <class State>
struct aggregate {
    std::string stream{};
    State state{};
    std::uint64_t version = 0;
    std::uint64_t position = 0;
    store_time recorded_at{};
    std::uint64_t snapshot_version = 0;
    std::uint64_t events_folded = 0;
    bool snapshot_ignored = false;
};

} // namespace letterbox
