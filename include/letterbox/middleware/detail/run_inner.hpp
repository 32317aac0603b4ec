// SPDX-License-Identifier: BSL-1.0
#pragma once

// Moved to <letterbox/detail/run_inner.hpp> (and `wrappable` to
// <letterbox/middleware/detail/wrappable.hpp>); kept so existing includes compile.
#include <letterbox/detail/run_inner.hpp>
#include <letterbox/middleware/detail/wrappable.hpp>
