// SPDX-License-Identifier: BSL-1.0
#pragma once

// Moved to <letterbox/backoff/fixed.hpp>; kept so that existing includes compile, with the old
// namespace name (<letterbox/retry.hpp>).
#include <letterbox/backoff/fixed.hpp>
#include <letterbox/retry.hpp>
