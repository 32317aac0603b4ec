// SPDX-License-Identifier: BSL-1.0
// The ODR test of LETTERBOX_FAILPOINTS: this translation unit is built with it, its twin
// failpoints_off.cpp the other way, and both are linked into one program.
#define LETTERBOX_FAILPOINTS

#include "failpoint_probe_here.hpp"

namespace letterbox_odr {

failpoint_probe with_failpoints() {
    return probe_here();
}

} // namespace letterbox_odr
