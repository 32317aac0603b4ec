// SPDX-License-Identifier: BSL-1.0
#pragma once

/// Time is a parameter (DESIGN §3.2): code that can be simulated reads time through a model of
/// `letterbox::clock`. This header brings the concept and both shipped models.
#include <letterbox/concepts/clock.hpp>
#include <letterbox/config.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/virtual_clock.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {
static_assert(clock<steady_clock>);
static_assert(clock<virtual_clock>);
} // namespace letterbox
