// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// One parameter (`$1`, `$2`, ...) of a statement run by `connection::exec`: text that the server
/// converts to the parameter's type, bytes (sent in binary, for a `bytea`), an integer, or NULL.
/// Text and bytes are views: what they view must outlive the `exec` call. An integer keeps its
/// own digits.
///
/// Example:
///
///     conn.exec("UPDATE account SET balance = balance - $2 WHERE id = $1",
///               {postgres::param::text(account_id), postgres::param(amount)}, ec);
class param {
public:
    /// NULL.
    param() noexcept = default;
    /// An integer, sent as its decimal text.
    explicit param(std::int64_t value)
        : digits_(std::to_string(value))
        , owns_digits_(true)
        , null_(false) {}

    /// `value` as text (the server parses it as the parameter's type: text, uuid, ...).
    static param text(std::string_view value) noexcept { return param(value, false); }
    /// `value` as raw bytes (binary format): for a `bytea` parameter.
    static param bytes(std::string_view value) noexcept { return param(value, true); }
    static param null() noexcept { return param(); }

    bool is_null() const noexcept { return null_; }
    bool is_binary() const noexcept { return binary_; }
    /// The bytes sent (a view into this object for an integer: valid while it lives unmoved).
    std::string_view value() const noexcept { return owns_digits_ ? digits_ : view_; }

private:
    param(std::string_view v, bool binary) noexcept
        : view_(v)
        , binary_(binary)
        , null_(false) {}

    std::string digits_;
    std::string_view view_;
    bool owns_digits_ = false;
    bool binary_ = false;
    bool null_ = true;
};

} // namespace letterbox::postgres
