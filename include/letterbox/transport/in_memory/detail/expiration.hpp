// SPDX-License-Identifier: BSL-1.0
#pragma once

// How the in-memory broker reads a message's `expiration` property. Private to the in-memory
// broker (broker_state.hpp).

#include <letterbox/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

// RabbitMQ parses the expiration with string:to_integer and refuses leftovers and negatives.
inline std::int64_t parse_expiration(std::string_view s, std::string& why) {
    std::size_t i = 0;
    bool negative = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+'))
        negative = s[i++] == '-';
    const auto digits_begin = i;
    std::int64_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && v < (std::int64_t{1} << 50))
        v = v * 10 + (s[i++] - '0');
    if (i == digits_begin) {
        why = "no_integer";
        return -1;
    }
    if (i != s.size()) {
        why = "{leftover_string,\"" + std::string(s.substr(i)) + "\"}";
        return -1;
    }
    if (negative && v != 0) {
        why = "{value_negative,-" + std::to_string(v) + "}";
        return -1;
    }
    return v;
}

} // namespace letterbox::in_memory::detail
