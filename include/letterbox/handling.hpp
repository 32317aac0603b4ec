// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// One run of a pipeline over one delivery.
struct handling {
    /// The delivery being handled: its message, queue and redelivered flag.
    const delivery& d;
    /// 1 on the first run of this delivery; the consumer runs it again with `run + 1` after
    /// a `disposition::retry_in` (in-process retry with a delay).
    std::uint32_t run = 1;
};

} // namespace letterbox::middleware
