// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Where an append to an `event_store` put its events, valid once its unit of work committed:
///
/// - `version`: the stream's version after the append (the version of its last event);
/// - `position`: the global position of its last event. A query that must see this write
///   waits until a projection has reached it (read-your-writes).
///
/// When the append conflicts, `version` is the stream's current version and `position` is 0.
struct append_result {
    std::uint64_t version = 0;
    std::uint64_t position = 0;

    friend bool operator==(const append_result&, const append_result&) = default;
};

} // namespace letterbox
