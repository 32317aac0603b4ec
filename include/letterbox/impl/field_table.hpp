// SPDX-License-Identifier: BSL-1.0
#pragma once

// The out-of-line members of `field_table` and `field_value`, declared in ../field_table.hpp:
// the variant's copy, move, comparison and destruction, instantiated once here rather than in
// every function that copies a message's headers.

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

LETTERBOX_DECL field_table::field_table(const field_table&) = default;
LETTERBOX_DECL field_table::field_table(field_table&&) noexcept = default;
LETTERBOX_DECL field_table& field_table::operator=(const field_table&) = default;
LETTERBOX_DECL field_table& field_table::operator=(field_table&&) noexcept = default;
LETTERBOX_DECL field_table::~field_table() = default;

LETTERBOX_DECL field_table::field_table(std::initializer_list<entry> entries) {
    for (const auto& e : entries)
        set(e.first, e.second);
}

LETTERBOX_DECL const field_value* field_table::find(std::string_view name) const noexcept {
    for (const auto& e : entries_)
        if (e.first == name)
            return &e.second;
    return nullptr;
}

LETTERBOX_DECL field_value* field_table::find(std::string_view name) noexcept {
    for (auto& e : entries_)
        if (e.first == name)
            return &e.second;
    return nullptr;
}

LETTERBOX_DECL field_table& field_table::set(std::string_view name, field_value value) {
    if (auto* v = find(name))
        *v = std::move(value);
    else
        entries_.emplace_back(std::string(name), std::move(value));
    return *this;
}

LETTERBOX_DECL bool field_table::erase(std::string_view name) noexcept {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->first == name) {
            entries_.erase(it);
            return true;
        }
    }
    return false;
}

LETTERBOX_DECL bool operator==(const field_table& a, const field_table& b) {
    return a.entries_ == b.entries_;
}

LETTERBOX_DECL field_value::field_value(const field_value&) = default;
LETTERBOX_DECL field_value::field_value(field_value&&) noexcept = default;
LETTERBOX_DECL field_value& field_value::operator=(const field_value&) = default;
LETTERBOX_DECL field_value& field_value::operator=(field_value&&) noexcept = default;
LETTERBOX_DECL field_value::~field_value() = default;

LETTERBOX_DECL std::optional<std::int64_t> field_value::as_integer() const noexcept {
    return std::visit(
        [](const auto& x) -> std::optional<std::int64_t> {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
                return static_cast<std::int64_t>(x);
            else
                return std::nullopt;
        },
        v_);
}

LETTERBOX_DECL bool operator==(const field_value& a, const field_value& b) {
    return a.v_ == b.v_;
}

} // namespace letterbox
