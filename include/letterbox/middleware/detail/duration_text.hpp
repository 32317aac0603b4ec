// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {

/// A duration for people: `2d 3h`, `1h 30m`, `45s`, `250ms`, `0ms` (two largest units).
inline std::string duration_text(std::chrono::milliseconds d) {
    using namespace std::chrono;
    if (d.count() < 0)
        return "-" + duration_text(-d);
    struct unit {
        std::int64_t ms;
        const char* name;
    };
    constexpr unit units[] = {
        {86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1'000, "s"}, {1, "ms"}};
    std::string out;
    std::int64_t left = d.count();
    int parts = 0;
    for (const auto& u : units) {
        if (parts == 2 || (parts == 1 && left == 0))
            break;
        if (left >= u.ms) {
            if (!out.empty())
                out += ' ';
            out += std::to_string(left / u.ms) + u.name;
            left %= u.ms;
            ++parts;
        } else if (parts == 1) {
            ++parts; // keep the two parts adjacent: 1h 0m 5s reads as 1h
        }
    }
    return out.empty() ? std::string("0ms") : out;
}

} // namespace letterbox::middleware::detail
