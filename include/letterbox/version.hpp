// SPDX-License-Identifier: BSL-1.0
#pragma once

/// letterbox's version, as `MAJOR * 10000 + MINOR * 100 + PATCH`.
#define LETTERBOX_VERSION_MAJOR 0
#define LETTERBOX_VERSION_MINOR 1
#define LETTERBOX_VERSION_PATCH 0
#define LETTERBOX_VERSION                                                                          \
    (LETTERBOX_VERSION_MAJOR * 10000 + LETTERBOX_VERSION_MINOR * 100 + LETTERBOX_VERSION_PATCH)
