// SPDX-License-Identifier: BSL-1.0
#pragma once

// The words the conformance suites compare error codes in. Private to the suites.

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// The text that assertions compare, so a failure prints both codes in words.
inline constexpr std::string_view success = "success";

/// `success` for no error, else `category:value (message)`.
inline std::string describe(std::error_code ec) {
    if (!ec)
        return std::string(success);
    return std::string(ec.category().name()) + ":" + std::to_string(ec.value()) + " (" +
           ec.message() + ")";
}

inline std::string describe(errc e) {
    return describe(make_error_code(e));
}

} // namespace letterbox::testing::detail
