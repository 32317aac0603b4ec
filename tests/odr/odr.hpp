// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <cstdint>
#include <system_error>

namespace letterbox_odr {

/// What each translation unit observes of the library.
struct probe {
    const std::error_category* category; ///< address of a function-local static
    std::uint64_t derived_seed;          ///< a constexpr computation
    long version;                        ///< LETTERBOX_VERSION
};

probe from_tu1();
probe from_tu2();

} // namespace letterbox_odr
