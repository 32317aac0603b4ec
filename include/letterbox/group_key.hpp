// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/header_text.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <optional>
#include <string>
#include <utility>

/// The functions that find a message's group: the key a consumer with
/// `consumer_options::groups` keeps the messages of one group in order by
/// (docs/message-groups.md). A key is text; the messages with the same text are one group.
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::group_key {

/// The key is the text of one header: a string (bytes as they are), a byte array, or an integer
/// in decimal. None when the header is absent, empty, or of another type (a table, a float, a
/// boolean...), so that a malformed key is refused rather than guessed.
class by_header {
public:
    explicit by_header(std::string name)
        : name_(std::move(name)) {}

    std::optional<std::string> operator()(const message& m) const {
        const auto* v = m.headers.find(name_);
        return v ? detail::header_text(*v) : std::nullopt;
    }

    /// The header's name.
    const std::string& name() const noexcept { return name_; }

private:
    std::string name_;
};

/// The default key: the `x-letterbox-group` header (`headers::group`), which the producer sets,
/// or the outbox's relay from the event's aggregate (`<aggregate type>/<aggregate id>`), so
/// that the events of one aggregate are one group without the producer naming it twice.
struct standard {
    std::optional<std::string> operator()(const message& m) const {
        const auto* v = m.headers.find(headers::group);
        return v ? detail::header_text(*v) : std::nullopt;
    }
};

} // namespace letterbox::group_key
