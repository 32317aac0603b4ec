// SPDX-License-Identifier: BSL-1.0
// Helpers of the codec tests: byte strings written as octets, as the spec's tables show them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace amqp_test {

/// The bytes `octets`, as a std::string (the codec's byte container).
inline std::string bytes(std::initializer_list<int> octets) {
    std::string out;
    for (const int o : octets)
        out.push_back(static_cast<char>(static_cast<unsigned char>(o)));
    return out;
}

/// A frame written by hand: type, channel, a 32-bit size, the payload and an end octet. `size`
/// defaults to the payload's size; tests that lie about it pass their own.
inline std::string raw_frame(int type, std::uint16_t channel, std::string_view payload,
                             std::uint32_t size, int end = 0xCE) {
    std::string out = bytes({type, channel >> 8, channel & 0xFF, static_cast<int>(size >> 24),
                             static_cast<int>((size >> 16) & 0xFF),
                             static_cast<int>((size >> 8) & 0xFF), static_cast<int>(size & 0xFF)});
    out.append(payload);
    out.push_back(static_cast<char>(static_cast<unsigned char>(end)));
    return out;
}

inline std::string raw_frame(int type, std::uint16_t channel, std::string_view payload) {
    return raw_frame(type, channel, payload, static_cast<std::uint32_t>(payload.size()));
}

} // namespace amqp_test
