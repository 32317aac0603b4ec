// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// How a transport settles a delivery: `basic.ack`, `basic.nack` or `basic.reject`. The
/// transports' `async_ack`, `async_nack` and `async_reject` share one settle path that takes it.
enum class settlement : std::uint8_t { ack, nack, reject };

} // namespace letterbox::detail
