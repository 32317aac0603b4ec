// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <boost/uuid/uuid_io.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

// Appends `text` as a double-quoted string in which nothing can end the line: `"` and `\` are
// escaped, and so is every control character, so one event stays one line of the text form.
inline void append_quoted(std::string& out, std::string_view text) {
    constexpr std::string_view hex = "0123456789abcdef";
    out += '"';
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            out += "\\x";
            out += hex[u >> 4U];
            out += hex[u & 0xfU];
        } else {
            out += c;
        }
    }
    out += '"';
}

inline std::string quote_text(std::string_view text) {
    std::string out;
    append_quoted(out, text);
    return out;
}

inline std::string id_text(const message_id& id) {
    return boost::uuids::to_string(id);
}

inline constexpr std::uint64_t fnv1a_offset_basis = 0xcbf29ce484222325U;

// Folds `bytes` into a running 64-bit FNV-1a hash.
constexpr std::uint64_t fnv1a(std::uint64_t hash, std::string_view bytes) noexcept {
    for (const char c : bytes) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3U; // FNV-1a 64-bit prime
    }
    return hash;
}

} // namespace letterbox::testing::detail
