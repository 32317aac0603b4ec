// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/percent_decode.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

using letterbox::detail::percent_decode;

/// `text` as one path segment or query value: every byte but the unreserved ones (letters,
/// digits, `-._~`) as `%XX`, so that a queue name or a message handle cannot change the
/// structure of a URL built from it.
inline std::string percent_encode(std::string_view text) {
    constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
            b == '-' || b == '.' || b == '_' || b == '~') {
            out += c;
        } else {
            out += '%';
            out += hex[b >> 4];
            out += hex[b & 0x0F];
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
