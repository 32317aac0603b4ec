// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/retry_policy.hpp>

namespace letterbox::testing {

/// Exactly what `letterbox::retry_policy` requires, with a trivial body: generic code
/// instantiated with it proves it uses nothing else. It is a copyable value, as the concept
/// requires.
//[retry_policy_archetype
struct retry_policy_archetype {
    retry_decision decide(const attempt_failure&) const { return {}; }
};
//]

} // namespace letterbox::testing
