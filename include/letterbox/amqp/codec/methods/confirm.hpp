// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string_view>

/// The methods of the AMQP 0-9-1 confirm class (85), a RabbitMQ extension: publisher confirms.
///
/// Each struct holds the method's arguments, with the spec's defaults; reserved arguments
/// are not members (they are written as zero or empty and skipped when read). The static
/// members give the wire identity: `class_id`, `method_id`, `name` ("class.method") and
/// `has_content` (a content header and body frames follow the method).
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// confirm.select (85, 10): RabbitMQ extension: puts the channel in publisher-confirm mode.
struct confirm_select {
    static constexpr std::uint16_t class_id = 85;
    static constexpr std::uint16_t method_id = 10;
    static constexpr std::string_view name = "confirm.select";
    static constexpr bool has_content = false;

    bool no_wait = false;

    friend bool operator==(const confirm_select&, const confirm_select&) = default;
};

/// confirm.select-ok (85, 11): Confirms confirm.select.
struct confirm_select_ok {
    static constexpr std::uint16_t class_id = 85;
    static constexpr std::uint16_t method_id = 11;
    static constexpr std::string_view name = "confirm.select-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const confirm_select_ok&, const confirm_select_ok&) = default;
};

} // namespace letterbox::amqp::codec
