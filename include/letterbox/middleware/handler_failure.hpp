// SPDX-License-Identifier: BSL-1.0
#pragma once

// Moved to <letterbox/handler_failure.hpp>; kept so existing includes compile.
#include <letterbox/handler_failure.hpp>
