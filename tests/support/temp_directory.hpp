// SPDX-License-Identifier: BSL-1.0
// A temporary directory per test, for the tests that use real files (SQLite databases): the
// public letterbox::testing::temp_directory under the name the tests have always used.
#pragma once

#include <letterbox/testing/temp_directory.hpp>

namespace test_support {

using temp_directory = letterbox::testing::temp_directory;

} // namespace test_support
