// SPDX-License-Identifier: BSL-1.0
// What one translation unit of the failpoints ODR test observes; failpoints_on.cpp includes it
// after defining LETTERBOX_FAILPOINTS, failpoints_off.cpp after undefining it. The function has
// internal linkage, so each translation unit keeps its own copy, as the test needs: what it
// calls from letterbox is what the test is about.
#pragma once

#include <letterbox/failpoint.hpp>
#include <letterbox/outbox/detail/relay_support.hpp>
#include <letterbox/outbox/relay_options.hpp>

#include "failpoints.hpp"

namespace letterbox_odr {
namespace {

failpoint_probe probe_here() {
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

} // namespace
} // namespace letterbox_odr
