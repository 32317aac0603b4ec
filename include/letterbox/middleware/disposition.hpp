// SPDX-License-Identifier: BSL-1.0
#pragma once

// Moved to <letterbox/disposition.hpp>; kept so existing includes compile.
#include <letterbox/disposition.hpp>
