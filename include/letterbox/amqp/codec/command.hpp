// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/content_header.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/config.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// One complete AMQP command, as the `content_assembler` delivers it: a method and, for the
/// content-bearing ones (basic.deliver, basic.get-ok, basic.return, basic.publish), its content
/// header and whole body.
struct command {
    /// The channel the command arrived on.
    std::uint16_t channel = 0;
    codec::method method{};
    /// Present exactly when `has_content(method)`.
    std::optional<content_header> header{};
    /// The body, joined from its body frames; empty without content.
    std::string body{};

    friend bool operator==(const command&, const command&) = default;
};

} // namespace letterbox::amqp::codec
