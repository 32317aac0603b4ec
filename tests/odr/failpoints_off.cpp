// SPDX-License-Identifier: BSL-1.0
// The ODR test of LETTERBOX_FAILPOINTS: this translation unit is built without it, its twin
// failpoints_on.cpp the other way, and both are linked into one program.
#undef LETTERBOX_FAILPOINTS

#include "failpoint_probe_here.hpp"

namespace letterbox_odr {

failpoint_probe without_failpoints() {
    return probe_here();
}

} // namespace letterbox_odr
