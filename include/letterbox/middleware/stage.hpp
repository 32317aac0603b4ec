// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

/// The place of a middleware layer in the default order (DESIGN §3.6), outermost first.
/// `compose` sorts layers by it; the idempotent unit of work and the handler sit inside all
/// of them.
enum class stage : std::uint8_t {
    dead_letter = 1, ///< the fallback that records the reason
    redelivery = 2,  ///< delayed retry through the broker
    retry = 3,       ///< immediate in-process retry
};

} // namespace letterbox::middleware
