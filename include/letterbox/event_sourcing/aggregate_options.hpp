// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstddef>
#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// How an `aggregate_repository` loads and snapshots.
struct aggregate_options {
    /// A snapshot is taken each time a stream's version passes a multiple of this (50: after
    /// the 50th event, the 100th, ...), so a load reads fewer than about this many events after
    /// the snapshot. 0: never.
    std::uint64_t snapshot_every = 0;

    /// How many events a load reads per call to the store. At least 1.
    std::size_t read_batch = 256;
};

} // namespace letterbox
