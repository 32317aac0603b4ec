// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff::detail {

/// The 64-bit FNV-1a hash of `text`: the same value on every platform.
constexpr std::uint64_t fnv1a64(std::string_view text) noexcept {
    std::uint64_t hash = 0xcbf29ce484222325U; // offset basis
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3U; // FNV prime
    }
    return hash;
}

/// The splitmix64 finaliser: a bijection of 64-bit values that spreads every input bit over
/// the whole output.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
    std::uint64_t z = x + 0x9e3779b97f4a7c15U;
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9U;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebU;
    return z ^ (z >> 31U);
}

/// 64 random-looking bits for one (seed, message id, attempt): splitmix64 of (splitmix64 of
/// `seed ^ fnv1a64(message_id)`) `^ attempt`. The inner mix keeps two messages' streams apart
/// (a plain `seed ^ hash ^ attempt` would let seed 1 attempt 2 collide with seed 2 attempt 1).
constexpr std::uint64_t jitter_bits(std::uint64_t seed, std::string_view message_id,
                                    std::uint32_t attempt) noexcept {
    return splitmix64(splitmix64(seed ^ fnv1a64(message_id)) ^ attempt);
}

} // namespace letterbox::backoff::detail
