// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// The invariants of orchestrated sagas that `check_saga_history` checks (docs/sagas.md,
/// "Testing sagas under faults"). `catalogue_id` gives their ids, S-01 to S-04, beside the
/// delivery invariants' I-01 to I-21.
enum class saga_invariant {
    /// S-01: every started saga ends `completed`, with each step done once and none undone, or
    /// `failed`, with every step that was done compensated exactly once, in reverse order.
    outcome,
    /// S-02: no compensation undoes a step that never happened.
    no_phantom_compensation,
    /// S-03: no step's effect happens twice.
    no_duplicate_step,
    /// S-04: a timeout moves a saga only while the step it is for still waits, and not before
    /// it is due.
    no_stray_timeout,
};

/// The invariant's name, as violations print it: "outcome", "no-phantom-compensation", ...
constexpr std::string_view to_string(saga_invariant which) noexcept {
    switch (which) {
    case saga_invariant::outcome:
        return "outcome";
    case saga_invariant::no_phantom_compensation:
        return "no-phantom-compensation";
    case saga_invariant::no_duplicate_step:
        return "no-duplicate-step";
    case saga_invariant::no_stray_timeout:
        return "no-stray-timeout";
    }
    return "unknown";
}

/// The invariant's id: "S-01" to "S-04".
constexpr std::string_view catalogue_id(saga_invariant which) noexcept {
    switch (which) {
    case saga_invariant::outcome:
        return "S-01";
    case saga_invariant::no_phantom_compensation:
        return "S-02";
    case saga_invariant::no_duplicate_step:
        return "S-03";
    case saga_invariant::no_stray_timeout:
        return "S-04";
    }
    return "S-??";
}

} // namespace letterbox::testing
