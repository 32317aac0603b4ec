// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// A header's value as a key text: a string (bytes as they are), a byte array, or an integer in
/// decimal. None when the text is empty or the value is of another type (a table, a float, a
/// boolean...), so that a malformed key is refused rather than guessed.
inline std::optional<std::string> header_text(const field_value& v) {
    std::optional<std::string> text;
    if (const auto* s = v.get_if<std::string>())
        text = *s;
    else if (const auto* b = v.get_if<byte_array>())
        text.emplace(reinterpret_cast<const char*>(b->data()), b->size());
    else if (const auto n = v.as_integer()) // not a boolean: as_integer leaves those out
        text = std::to_string(*n);
    if (text && text->empty())
        return std::nullopt;
    return text;
}

} // namespace letterbox::detail
