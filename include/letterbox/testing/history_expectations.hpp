// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What `check_all` expects of a run beyond the history itself.
struct history_expectations {
    /// The consumers that must see every committed message: each must apply it, or it must be
    /// dead-lettered (for that consumer, or before any consumer). An empty list makes no-loss,
    /// poison isolation and convergence vacuous; the checkers do not guess the consumers from
    /// the history, since a consumer that saw nothing would not appear in it.
    std::vector<std::string> consumers;
    /// Bounded redelivery: at most this many deliveries per (consumer, message id), for
    /// example the retry policy's max_attempts. Not checked when empty.
    std::optional<std::uint32_t> max_deliveries{};
    /// Convergence: every committed message settles within this virtual time after the later
    /// of the last fault and its commit. Not checked when empty.
    std::optional<std::chrono::nanoseconds> settle_within{};
};

} // namespace letterbox::testing
