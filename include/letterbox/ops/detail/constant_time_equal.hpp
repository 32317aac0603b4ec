// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstddef>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

/// Whether `given` equals `expected`, in a time that depends on `expected.size()` only: every
/// byte of `expected` is compared (against `given`'s byte at the same index, or 0 past its end)
/// with no early exit, and a length mismatch is folded into the same accumulator instead of
/// returning early. For comparing a client's credential with the configured one.
inline bool constant_time_equal(std::string_view given, std::string_view expected) noexcept {
    // volatile keeps the compiler from turning the accumulation into an early exit.
    volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0U;
        diff = static_cast<unsigned char>(diff | (g ^ static_cast<unsigned char>(expected[i])));
    }
    return diff == 0;
}

} // namespace letterbox::ops::detail
