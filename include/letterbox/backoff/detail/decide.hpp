// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/classifier.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>

#include <cstdint>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff::detail {

/// The decision every shipped policy makes, in this order: a permanent failure gives up at
/// once; a transient one gives up when `f.attempt` reached `max_attempts` (which counts the
/// first attempt); otherwise retry after `delay_of(f.attempt, f.message_id)`.
template <class DelayOf>
retry_decision decide(const classifier& c, std::uint32_t max_attempts, const attempt_failure& f,
                      const DelayOf& delay_of) {
    if (c.is_permanent(f)) {
        return retry_decision::permanent_failure();
    }
    if (f.attempt >= max_attempts) {
        return retry_decision::exhausted();
    }
    return retry_decision::retry_after(delay_of(f.attempt, f.message_id));
}

} // namespace letterbox::backoff::detail
