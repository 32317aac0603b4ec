// SPDX-License-Identifier: BSL-1.0
// Test helpers of the SQLite unit tests: a temporary directory per test, and a fixed instant.
#pragma once

#include <letterbox/store_time.hpp>

#include "support/temp_directory.hpp"

#include <chrono>

namespace letterbox_sqlite_test {

using test_support::temp_directory;

/// 2024-01-01T00:00:00Z, a whole second.
inline letterbox::store_time t0() {
    return letterbox::store_time{std::chrono::sys_days{std::chrono::year{2024} / 1 / 1}};
}

} // namespace letterbox_sqlite_test
