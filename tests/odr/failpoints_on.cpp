// SPDX-License-Identifier: BSL-1.0
// The ODR test of LETTERBOX_FAILPOINTS: this translation unit is built with it, its twin
// failpoints_off.cpp the other way, and both are linked into one program.
#define LETTERBOX_FAILPOINTS

#include <letterbox/failpoint.hpp>
#include <letterbox/outbox/detail/relay_support.hpp>
#include <letterbox/outbox/relay_options.hpp>

#include "failpoints.hpp"

namespace letterbox_odr {

failpoint_probe with_failpoints() {
    letterbox::relay_options options;
    options.failpoint = [](letterbox::relay_point, const letterbox::outbox_record&) {
        return false;
    };
    bool accepted = true;
    try {
        letterbox::detail::check_relay_options(options);
    } catch (const letterbox::error&) {
        accepted = false;
    }
    return {&letterbox::failpoints_enabled, accepted};
}

} // namespace letterbox_odr
