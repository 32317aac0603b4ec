// SPDX-License-Identifier: BSL-1.0
#pragma once

// Moved to <letterbox/outbox_record.hpp>; kept so existing includes compile.
#include <letterbox/outbox_record.hpp>
