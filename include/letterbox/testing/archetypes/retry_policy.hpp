// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Exactly what `letterbox::retry_policy` requires, with trivial bodies: generic code
/// instantiated with it proves it uses nothing else. It is a copyable value, as the concept
/// requires; it gives up at once (one attempt, no delays), which keeps the semantic
/// requirements too.
//[retry_policy_archetype
struct retry_policy_archetype {
    retry_decision decide(const attempt_failure&) const { return {}; }
    std::uint32_t max_attempts() const { return 1; }
    std::chrono::milliseconds horizon() const { return {}; }
};
//]

} // namespace letterbox::testing
