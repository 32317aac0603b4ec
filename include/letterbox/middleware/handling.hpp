// SPDX-License-Identifier: BSL-1.0
#pragma once

// Moved to <letterbox/handling.hpp>; kept so existing includes compile.
#include <letterbox/handling.hpp>
