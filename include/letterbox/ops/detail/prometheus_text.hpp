// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

/// The pieces of the Prometheus text exposition format 0.0.4: name checks, escaping and number
/// formatting, shared by the registry and its tests.
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`
inline bool is_metric_name(std::string_view n) noexcept {
    if (n.empty())
        return false;
    for (std::size_t i = 0; i < n.size(); ++i) {
        const char c = n[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        const bool digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0))
            return false;
    }
    return true;
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`, and not starting with `__` (reserved by Prometheus).
inline bool is_label_name(std::string_view n) noexcept {
    if (n.empty() || n.starts_with("__"))
        return false;
    for (std::size_t i = 0; i < n.size(); ++i) {
        const char c = n[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        const bool digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0))
            return false;
    }
    return true;
}

/// `text` with `\` written `\\`, a line feed `\n` and, if `quotes`, `"` written `\"`.
inline void append_escaped(std::string& out, std::string_view text, bool quotes) {
    for (char c : text) {
        if (c == '\\')
            out += "\\\\";
        else if (quotes && c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
}

/// HELP text: `\` becomes `\\` and a line feed `\n`.
inline void append_help(std::string& out, std::string_view text) {
    append_escaped(out, text, false);
}

/// A label value: `\` becomes `\\`, `"` becomes `\"` and a line feed `\n`.
inline void append_label_value(std::string& out, std::string_view text) {
    append_escaped(out, text, true);
}

/// A sample value as Prometheus reads it: `+Inf`, `-Inf`, `NaN`, integers without a fraction,
/// others in the shortest form that reads back exactly.
inline void append_number(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "NaN";
        return;
    }
    if (std::isinf(v)) {
        out += v > 0 ? "+Inf" : "-Inf";
        return;
    }
    char buf[64];
    std::to_chars_result r{};
    if (v == std::floor(v) && std::fabs(v) < 1e15)
        r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v));
    else
        r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

} // namespace letterbox::ops::detail
