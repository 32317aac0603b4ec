// SPDX-License-Identifier: BSL-1.0
#pragma once

namespace letterbox_odr {

/// What a translation unit built with or without `LETTERBOX_FAILPOINTS` observes.
struct failpoint_probe {
    const bool* enabled;    ///< the address of its `letterbox::failpoints_enabled`
    bool accepts_failpoint; ///< whether the relay's option check accepts a failpoint hook
};

failpoint_probe with_failpoints();
failpoint_probe without_failpoints();

} // namespace letterbox_odr
