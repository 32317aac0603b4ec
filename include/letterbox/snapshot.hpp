// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/store_time.hpp>

#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The state of an event-sourced aggregate after a version of its stream, kept by a
/// `snapshot_store` so that loading it reads only the events after that version.
///
/// - `stream` and `version`: the state includes the stream's events up to `version`, no more.
/// - `recorded_at`: the `recorded_at` of the event at `version`. A load as of a time uses a
///   snapshot only when this is at or before that time.
/// - `fold_version`: the version of the fold that computed `state`. A loader whose fold has
///   another version ignores the snapshot and folds from the events, never applying a state
///   computed by other rules.
/// - `state`: the state, as JSON text.
struct snapshot {
    std::string stream{};
    std::uint64_t version = 0;
    store_time recorded_at{};
    std::uint32_t fold_version = 0;
    std::string state{};

    friend bool operator==(const snapshot&, const snapshot&) = default;
};

} // namespace letterbox
