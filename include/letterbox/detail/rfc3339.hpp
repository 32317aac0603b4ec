// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Formats `t` as RFC 3339 UTC with milliseconds: `2026-11-30T09:15:02.250Z`. Times are
/// truncated towards the past to the millisecond. This is the text of letterbox's time
/// headers: readable in a broker's management UI and sortable as a string.
inline std::string format_rfc3339(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    const auto ms = floor<milliseconds>(t);
    const auto day = floor<days>(ms);
    const year_month_day ymd{day};
    const hh_mm_ss hms{ms - day};
    char text[40];
    std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ",
                  static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                  static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                  static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                  static_cast<int>(hms.subseconds().count()));
    return text;
}

/// Parses what `format_rfc3339` writes, and also a time without fraction (`...:02Z`) or with
/// 1 to 9 fraction digits (truncated to the millisecond). Only UTC (`Z`) is accepted.
/// Returns `std::nullopt` for anything else: the text of a header is never trusted.
inline std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view s) {
    using namespace std::chrono;
    std::size_t i = 0;
    auto number = [&](std::size_t digits, int& out) {
        if (i + digits > s.size())
            return false;
        out = 0;
        for (std::size_t k = 0; k < digits; ++k) {
            const char c = s[i + k];
            if (c < '0' || c > '9')
                return false;
            out = out * 10 + (c - '0');
        }
        i += digits;
        return true;
    };
    auto literal = [&](char c) {
        if (i >= s.size() || s[i] != c)
            return false;
        ++i;
        return true;
    };
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
    if (!number(4, y) || !literal('-') || !number(2, mo) || !literal('-') || !number(2, d) ||
        !literal('T') || !number(2, h) || !literal(':') || !number(2, mi) || !literal(':') ||
        !number(2, sec))
        return std::nullopt;
    int millis = 0;
    if (i < s.size() && s[i] == '.') {
        ++i;
        std::size_t digits = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            if (digits < 3)
                millis = millis * 10 + (s[i] - '0');
            ++digits;
            ++i;
        }
        if (digits == 0 || digits > 9)
            return std::nullopt;
        for (std::size_t k = digits; k < 3; ++k)
            millis *= 10;
    }
    if (!literal('Z') || i != s.size())
        return std::nullopt;
    const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                             day{static_cast<unsigned>(d)}};
    if (!ymd.ok() || h > 23 || mi > 59 || sec > 59)
        return std::nullopt;
    return sys_days{ymd} + hours{h} + minutes{mi} + seconds{sec} + milliseconds{millis};
}

} // namespace letterbox::detail
