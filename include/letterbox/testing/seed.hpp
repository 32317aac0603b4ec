// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

/// One seed per test process, so any randomized failure can be replayed.
///
/// letterbox's test main reads `LETTERBOX_SEED` (a decimal `std::uint64_t`), or picks one and
/// exports it, prints `LETTERBOX_SEED=<n>` first thing, and seeds Catch2 (`--rng-seed`) and
/// RapidCheck (`RC_PARAMS="seed=<n>"`) from it. Replay a failure with
/// `LETTERBOX_SEED=<n> ./letterbox_unit_tests "<test name>"`.
///
/// Tests that run their own generators take `derive_seed(test_seed(), "<subsystem>")`, so that
/// two subsystems never share a random stream and adding one does not shift the others.
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// The environment variable that holds the seed of the current test process.
inline constexpr const char* seed_environment_variable = "LETTERBOX_SEED";

/// The seed `test_seed()` returns when `LETTERBOX_SEED` is absent or malformed (for code that
/// runs outside letterbox's test main, which always sets it).
inline constexpr std::uint64_t default_test_seed = 1;

/// Parses a seed: decimal digits only, no sign or spaces, at most 2^64 - 1.
constexpr std::optional<std::uint64_t> parse_seed(std::string_view text) noexcept {
    if (text.empty()) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (UINT64_MAX - digit) / 10) {
            return std::nullopt; // overflow
        }
        value = value * 10 + digit;
    }
    return value;
}

/// The seed of this test process: `LETTERBOX_SEED`, or `default_test_seed` if it is absent or
/// not a decimal `std::uint64_t`.
inline std::uint64_t test_seed() noexcept {
    const char* text = std::getenv(seed_environment_variable);
    if (text == nullptr) {
        return default_test_seed;
    }
    return parse_seed(text).value_or(default_test_seed);
}

/// A seed for one subsystem, derived deterministically from a root seed and the subsystem's
/// name: splitmix64 of `root` xor the 64-bit FNV-1a hash of `subsystem`. Different names give
/// unrelated streams; the same inputs give the same seed on every platform.
constexpr std::uint64_t derive_seed(std::uint64_t root, std::string_view subsystem) noexcept {
    std::uint64_t hash = 0xcbf29ce484222325U; // FNV-1a offset basis
    for (const char c : subsystem) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3U; // FNV-1a prime
    }
    std::uint64_t z = (root ^ hash) + 0x9e3779b97f4a7c15U; // splitmix64
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9U;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebU;
    return z ^ (z >> 31U);
}

} // namespace letterbox::testing
