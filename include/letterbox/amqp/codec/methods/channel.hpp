// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string>
#include <string_view>

/// The methods of the AMQP 0-9-1 channel class (20): open, flow and close of a channel.
///
/// Each struct holds the method's arguments, with the spec's defaults; reserved arguments
/// are not members (they are written as zero or empty and skipped when read). The static
/// members give the wire identity: `class_id`, `method_id`, `name` ("class.method") and
/// `has_content` (a content header and body frames follow the method).
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// channel.open (20, 10): Opens a channel. (The reserved `out-of-band` shortstr is written empty
/// and skipped.)
struct channel_open {
    static constexpr std::uint16_t class_id = 20;
    static constexpr std::uint16_t method_id = 10;
    static constexpr std::string_view name = "channel.open";
    static constexpr bool has_content = false;

    friend bool operator==(const channel_open&, const channel_open&) = default;
};

/// channel.open-ok (20, 11): The channel is open. (The reserved `channel-id` longstr is skipped.)
struct channel_open_ok {
    static constexpr std::uint16_t class_id = 20;
    static constexpr std::uint16_t method_id = 11;
    static constexpr std::string_view name = "channel.open-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const channel_open_ok&, const channel_open_ok&) = default;
};

/// channel.flow (20, 20): Asks the peer to stop (`active` false) or resume sending content.
struct channel_flow {
    static constexpr std::uint16_t class_id = 20;
    static constexpr std::uint16_t method_id = 20;
    static constexpr std::string_view name = "channel.flow";
    static constexpr bool has_content = false;

    bool active = true;

    friend bool operator==(const channel_flow&, const channel_flow&) = default;
};

/// channel.flow-ok (20, 21): Confirms channel.flow with the peer's current state.
struct channel_flow_ok {
    static constexpr std::uint16_t class_id = 20;
    static constexpr std::uint16_t method_id = 21;
    static constexpr std::string_view name = "channel.flow-ok";
    static constexpr bool has_content = false;

    bool active = true;

    friend bool operator==(const channel_flow_ok&, const channel_flow_ok&) = default;
};

/// channel.close (20, 40): Closes the channel with a reply code, a text, and the class and method
/// that caused it.
struct channel_close {
    static constexpr std::uint16_t class_id = 20;
    static constexpr std::uint16_t method_id = 40;
    static constexpr std::string_view name = "channel.close";
    static constexpr bool has_content = false;

    std::uint16_t reply_code = 0;
    std::string reply_text{};
    std::uint16_t failing_class_id = 0;
    std::uint16_t failing_method_id = 0;

    friend bool operator==(const channel_close&, const channel_close&) = default;
};

/// channel.close-ok (20, 41): Confirms channel.close.
struct channel_close_ok {
    static constexpr std::uint16_t class_id = 20;
    static constexpr std::uint16_t method_id = 41;
    static constexpr std::string_view name = "channel.close-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const channel_close_ok&, const channel_close_ok&) = default;
};

} // namespace letterbox::amqp::codec
