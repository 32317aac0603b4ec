// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Decodes `%XX` escapes (either case of hex digit), and `+` as a space when `plus_is_space`
/// (the query strings of HTML forms). `std::nullopt` for a malformed escape. Shared by the AMQP
/// URL parser and the ops endpoint's request targets.
inline std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space = false) {
    const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        return -1;
    };
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '%') {
            if (i + 2 >= s.size())
                return std::nullopt;
            const int hi = hex(s[i + 1]);
            const int lo = hex(s[i + 2]);
            if (hi < 0 || lo < 0)
                return std::nullopt;
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
    return out;
}

} // namespace letterbox::detail
