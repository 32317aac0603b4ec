// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq::detail {

/// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
inline bool is_valid_utf8(std::string_view s) noexcept {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t n = 0;
        std::uint32_t cp = 0;
        std::uint32_t min = 0;
        if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1Fu;
            min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0Fu;
            min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07u;
            min = 0x10000;
        } else {
            return false;
        }
        if (i + n >= s.size())
            return false;
        for (std::size_t k = 1; k <= n; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (cc & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

/// Whether a body reads as text: well-formed UTF-8 without control characters other than
/// tab, line feed and carriage return. JSON bodies are text by this rule.
inline bool is_text(std::string_view s) noexcept {
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
            return false;
    }
    return is_valid_utf8(s);
}

/// Standard base64 (RFC 4648 §4) with padding.
inline std::string base64_encode(std::string_view bytes) {
    static constexpr char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                                (std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                                std::uint32_t{static_cast<unsigned char>(bytes[i + 2])};
        out.push_back(alphabet[(v >> 18) & 0x3F]);
        out.push_back(alphabet[(v >> 12) & 0x3F]);
        out.push_back(alphabet[(v >> 6) & 0x3F]);
        out.push_back(alphabet[v & 0x3F]);
    }
    const std::size_t rest = bytes.size() - i;
    if (rest != 0) {
        std::uint32_t v = std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
        if (rest == 2)
            v |= std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
        out.push_back(alphabet[(v >> 18) & 0x3F]);
        out.push_back(alphabet[(v >> 12) & 0x3F]);
        out.push_back(rest == 2 ? alphabet[(v >> 6) & 0x3F] : '=');
        out.push_back('=');
    }
    return out;
}

/// `s` with every byte that is not part of well-formed UTF-8 replaced by U+FFFD, so that
/// `nlohmann::json::dump` never throws on text that came from a message header.
inline std::string to_valid_utf8(std::string_view s) {
    if (is_valid_utf8(s))
        return std::string(s);
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t len = c < 0x80             ? 1
                                : (c & 0xE0) == 0xC0 ? 2
                                : (c & 0xF0) == 0xE0 ? 3
                                : (c & 0xF8) == 0xF0 ? 4
                                                     : 0;
        if (len != 0 && i + len <= s.size() && is_valid_utf8(s.substr(i, len))) {
            out.append(s.substr(i, len));
            i += len;
        } else {
            out.append("\xEF\xBF\xBD");
            ++i;
        }
    }
    return out;
}

/// Replaces, in place and recursively, every string (and object key) of `j` that is not
/// well-formed UTF-8 (see `to_valid_utf8`).
inline void make_valid_utf8(nlohmann::json& j) {
    if (j.is_string()) {
        auto& s = j.get_ref<std::string&>();
        if (!is_valid_utf8(s))
            s = to_valid_utf8(s);
    } else if (j.is_array()) {
        for (auto& e : j)
            make_valid_utf8(e);
    } else if (j.is_object()) {
        bool bad_key = false;
        for (auto it = j.begin(); it != j.end(); ++it) {
            bad_key = bad_key || !is_valid_utf8(it.key());
            make_valid_utf8(it.value());
        }
        if (bad_key) {
            nlohmann::json fixed = nlohmann::json::object();
            for (auto it = j.begin(); it != j.end(); ++it)
                fixed[to_valid_utf8(it.key())] = std::move(it.value());
            j = std::move(fixed);
        }
    }
}

/// The text of a header holding a string, or `std::nullopt`.
inline std::optional<std::string> header_text(const field_table& headers, std::string_view name) {
    if (const auto* v = headers.find(name))
        if (const auto* s = v->get_if<std::string>())
            return *s;
    return std::nullopt;
}

/// A value's text for comparing with a filter: strings as they are, integers in decimal,
/// booleans as `true`/`false`, floating-point numbers as JSON writes them. Other types
/// (tables, arrays, timestamps, ...) have no text.
inline std::optional<std::string> value_text(const field_value& v) {
    if (const auto* s = v.get_if<std::string>())
        return *s;
    if (const auto* b = v.get_if<bool>())
        return *b ? "true" : "false";
    if (const auto n = v.as_integer())
        return std::to_string(*n);
    if (const auto* f = v.get_if<float>())
        return nlohmann::json(*f).dump();
    if (const auto* d = v.get_if<double>())
        return nlohmann::json(*d).dump();
    return std::nullopt;
}

} // namespace letterbox::dlq::detail
