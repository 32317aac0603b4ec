// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/detail/classified.hpp>
#include <letterbox/backoff/jitter.hpp>
#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff::detail {

/// What a waiting retry policy adds to `classified<Derived>`: the jitter, with its builder, its
/// accessor and the jittered `delay`. A public base of `fixed` and `exponential`, which pass
/// themselves as `Derived` so the builders return the policy, not this base.
///
/// `Derived` must have `base_delay(attempt)` (`const noexcept`), the un-jittered schedule, and
/// what `classified` asks for (`max_attempts()`; `delay` is this class's).
template <class Derived>
class jittered : public classified<Derived> {
public:
    /// Replaces the jitter (by default none: `jitter{}`, every delay is the base delay). The
    /// jitter only lowers a delay, so `horizon()` does not change.
    ///
    /// On an lvalue, changes the policy and returns it (`Derived&`); on an rvalue, returns the
    /// changed policy by value, so `backoff::fixed(1s, 3).with_jitter(j)` is a `backoff::fixed`.
    Derived& with_jitter(jitter j) & {
        jitter_ = j;
        return static_cast<Derived&>(*this);
    }
    /// As above, for a temporary policy: returns the changed policy by value.
    [[nodiscard]] Derived with_jitter(jitter j) && { return std::move(with_jitter(j)); }

    /// The jitter `delay` applies (the last one `with_jitter` set).
    const jitter& get_jitter() const noexcept { return jitter_; }

    /// The delay before the retry that follows attempt `attempt` of `message_id`, jitter
    /// applied: `apply(get_jitter(), base_delay(attempt), message_id, attempt)`.
    std::chrono::milliseconds delay(std::uint32_t attempt,
                                    std::string_view message_id) const noexcept {
        return apply(jitter_, static_cast<const Derived&>(*this).base_delay(attempt), message_id,
                     attempt);
    }

protected:
    jittered() = default;

private:
    jitter jitter_{};
};

} // namespace letterbox::backoff::detail
