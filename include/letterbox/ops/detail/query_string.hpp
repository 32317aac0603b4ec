// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace letterbox::ops::detail {

/// `%XX` decoding, with `+` as a space when `plus_is_space` (query strings). `std::nullopt` for
/// a malformed escape.
inline std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space) {
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

/// A request target split into its decoded path segments and its decoded query parameters
/// (in order, repeated names kept).
struct parsed_target {
    std::vector<std::string> segments{};
    std::vector<std::pair<std::string, std::string>> params{};
};

/// Splits `/a/b%2Fc?x=1&y` into `{"a", "b/c"}` and `{{"x", "1"}, {"y", ""}}`. Empty segments
/// (`//`, a trailing `/`) are dropped. `std::nullopt` for a target that is not an origin form
/// (does not start with `/`) or has a malformed escape.
inline std::optional<parsed_target> parse_target(std::string_view target) {
    if (target.empty() || target.front() != '/')
        return std::nullopt;
    parsed_target out;
    const auto q = target.find('?');
    const auto path = target.substr(0, q);
    std::size_t start = 1;
    while (start <= path.size()) {
        auto end = path.find('/', start);
        if (end == std::string_view::npos)
            end = path.size();
        if (end > start) {
            auto seg = percent_decode(path.substr(start, end - start), false);
            if (!seg)
                return std::nullopt;
            out.segments.push_back(std::move(*seg));
        }
        start = end + 1;
    }
    if (q == std::string_view::npos)
        return out;
    auto query = target.substr(q + 1);
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (pair.empty())
            continue;
        const auto eq = pair.find('=');
        auto name = percent_decode(pair.substr(0, eq), true);
        auto value = percent_decode(
            eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), true);
        if (!name || !value)
            return std::nullopt;
        out.params.emplace_back(std::move(*name), std::move(*value));
    }
    return out;
}

} // namespace letterbox::ops::detail
