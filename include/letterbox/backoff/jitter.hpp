// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/detail/hash.hpp>
#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff {

/// How a delay is randomised so that many consumers failing at once do not retry in lockstep.
enum class jitter_kind {
    none, ///< the delay is the base delay
    full, ///< uniform in `[0, base]`
    equal ///< uniform in `[ceil(base / 2), base]`: at least half the base delay
};

/// A jitter setting: its kind and the seed it is derived from.
///
/// Jitter is never random at run time: the delay for one attempt is a pure function of
/// (seed, message id, attempt), computed with integer arithmetic and a hash of our own (no
/// `std::uniform_int_distribution`, whose output differs between standard libraries). The
/// same message therefore gets the same schedule on every consumer, platform and replay, while
/// different messages spread out. Jitter only ever lowers a delay, never raises it.
///
/// Example:
///
///     auto policy = backoff::exponential(100ms, 2.0, 30s,
///     6).with_jitter(backoff::jitter::full(42));
struct jitter {
    jitter_kind kind = jitter_kind::none;
    std::uint64_t seed = 0;

    /// Full jitter (uniform in `[0, base]`) from `seed`.
    static constexpr jitter full(std::uint64_t seed) noexcept { return {jitter_kind::full, seed}; }
    /// Equal jitter (uniform in `[ceil(base / 2), base]`) from `seed`.
    static constexpr jitter equal(std::uint64_t seed) noexcept {
        return {jitter_kind::equal, seed};
    }

    friend bool operator==(const jitter&, const jitter&) = default;
};

/// The delay for attempt `attempt` of the message `message_id`: `base` with jitter `j` applied.
///
/// - `jitter_kind::none`: `base`.
/// - `jitter_kind::full`: uniform in `[0, base]`.
/// - `jitter_kind::equal`: uniform in `[base - base / 2, base]` (integer milliseconds, so at
///   least half of `base`, rounded up).
///
/// "Uniform" is `low + h % (base - low + 1)` where `h` is splitmix64 of (splitmix64 of
/// `seed ^ fnv1a64(message_id)`) `^ attempt`; the modulo bias is at most `span / 2^64`, below
/// 2^-30 for any delay under 198 days. A `base` of zero or less is returned unchanged.
constexpr std::chrono::milliseconds apply(jitter j, std::chrono::milliseconds base,
                                          std::string_view message_id,
                                          std::uint32_t attempt) noexcept {
    if (j.kind == jitter_kind::none || base.count() <= 0) {
        return base;
    }
    const auto b = static_cast<std::uint64_t>(base.count());
    const std::uint64_t low = j.kind == jitter_kind::equal ? b - b / 2 : 0;
    const std::uint64_t span = b - low + 1; // b < 2^63, so this never wraps to 0
    const std::uint64_t h = detail::jitter_bits(j.seed, message_id, attempt);
    return std::chrono::milliseconds{static_cast<std::chrono::milliseconds::rep>(low + h % span)};
}

} // namespace letterbox::backoff
