// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Deliberately broken participants for the saga simulation's self-test: each gives up one
/// thing the saga guarantees rest on, and `check_saga_simulation` with it must report
/// violations. A checker that never fails on these proves nothing on the correct code.
enum class saga_defect : std::uint8_t {
    none,
    /// A participant undoes a step (its compensation's effect) in a transaction of its own,
    /// committed before the one that records the compensation, its inbox record and its reply.
    /// A crash between the two leaves the step undone but the compensation unrecorded; the
    /// redelivery undoes it again: `outcome` fails (compensated twice).
    compensation_outside_transaction,
    /// A participant applies a command that comes after its compensation (held back by a
    /// retry, or by an outage, while the step timed out and was compensated with nothing to
    /// undo). The step's effect then stays, and nothing undoes it: `outcome` fails.
    late_command_applied,
    /// A participant undoes a step whether or not it happened (a compensation after a
    /// timeout, or after a declined step): `no-phantom-compensation` fails.
    undo_without_check,
};

/// The defect's name, as reports spell it.
constexpr std::string_view to_string(saga_defect d) noexcept {
    switch (d) {
    case saga_defect::none:
        return "none";
    case saga_defect::compensation_outside_transaction:
        return "compensation_outside_transaction";
    case saga_defect::late_command_applied:
        return "late_command_applied";
    case saga_defect::undo_without_check:
        return "undo_without_check";
    }
    return "unknown";
}

} // namespace letterbox::testing
