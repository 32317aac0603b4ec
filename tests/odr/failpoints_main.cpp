// SPDX-License-Identifier: BSL-1.0
// Mixing translation units built with and without LETTERBOX_FAILPOINTS in one program: each must
// keep its own definitions (config.hpp, LETTERBOX_ABI_NAMESPACE). Without the ABI-tagged inline
// namespace the two `check_relay_options` are one symbol, the linker keeps one of them, and one
// translation unit sees the other's behaviour.
#include "failpoints.hpp"

#include <iostream>

int main() {
    const letterbox_odr::failpoint_probe on = letterbox_odr::with_failpoints();
    const letterbox_odr::failpoint_probe off = letterbox_odr::without_failpoints();
    bool ok = true;
    if (on.enabled == off.enabled) {
        std::cout << "odr failpoints: both translation units share one failpoints_enabled\n";
        ok = false;
    }
    if (!*on.enabled || *off.enabled) {
        std::cout << "odr failpoints: failpoints_enabled is " << *on.enabled << " with and "
                  << *off.enabled << " without LETTERBOX_FAILPOINTS\n";
        ok = false;
    }
    if (!on.accepts_failpoint || off.accepts_failpoint) {
        std::cout << "odr failpoints: the relay accepts a failpoint hook: " << on.accepts_failpoint
                  << " with and " << off.accepts_failpoint << " without LETTERBOX_FAILPOINTS\n";
        ok = false;
    }
    if (ok)
        std::cout << "odr failpoints: ok (each translation unit keeps its own definitions)\n";
    return ok ? 0 : 1;
}
