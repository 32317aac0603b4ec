// SPDX-License-Identifier: BSL-1.0
#pragma once

// Moved to <letterbox/transport/async_declare_all.hpp>; kept so existing includes compile.
#include <letterbox/transport/async_declare_all.hpp>
