// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// The delivery invariants that the history checkers check, named after the invariant catalogue
/// (reliability-anchors C3). `catalogue_id` gives the catalogue's id.
enum class invariant {
    no_loss,             ///< I-01: every committed message ends as an effect or a dead letter
    no_phantom,          ///< I-02: nothing is observed that was not committed first
    no_duplicate_effect, ///< I-03: at most one effect per (consumer, message id)
    aggregate_order,     ///< I-06: a consumer applies an aggregate's effects in sequence order
    bounded_redelivery,  ///< I-08: deliveries per (consumer, message id) stay within a bound
    poison_isolation,    ///< I-09: a poison message is dead-lettered; the others still apply
    convergence,         ///< I-18: after the last fault, everything settles by a deadline
    determinism          ///< I-21: the same seed gives the same trace
};

/// The invariant's name, as violations print it: "no-loss", "no-phantom", ...
constexpr std::string_view to_string(invariant which) noexcept {
    switch (which) {
    case invariant::no_loss:
        return "no-loss";
    case invariant::no_phantom:
        return "no-phantom";
    case invariant::no_duplicate_effect:
        return "no-duplicate-effect";
    case invariant::aggregate_order:
        return "aggregate-order";
    case invariant::bounded_redelivery:
        return "bounded-redelivery";
    case invariant::poison_isolation:
        return "poison-isolation";
    case invariant::convergence:
        return "convergence";
    case invariant::determinism:
        return "determinism";
    }
    return "unknown";
}

/// The invariant's id in the catalogue (reliability-anchors C3): "I-01", "I-02", ...
constexpr std::string_view catalogue_id(invariant which) noexcept {
    switch (which) {
    case invariant::no_loss:
        return "I-01";
    case invariant::no_phantom:
        return "I-02";
    case invariant::no_duplicate_effect:
        return "I-03";
    case invariant::aggregate_order:
        return "I-06";
    case invariant::bounded_redelivery:
        return "I-08";
    case invariant::poison_isolation:
        return "I-09";
    case invariant::convergence:
        return "I-18";
    case invariant::determinism:
        return "I-21";
    }
    return "I-??";
}

} // namespace letterbox::testing
