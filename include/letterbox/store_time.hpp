// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The time stores read and write: wall-clock time, because rows outlive the process and are
/// read by operators. Stores never read a clock themselves; every operation that needs "now"
/// takes it as an argument (callers pass their clock's `wall_now()`), so tests and simulations
/// control it.
using store_time = std::chrono::system_clock::time_point;

} // namespace letterbox
