// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/field_table.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace letterbox::amqp::codec {

/// The 14 properties of the AMQP basic class, exactly as they travel in a content header: each
/// is present or absent, and nothing is interpreted. (`to_message` and `to_basic_properties` in
/// message_mapping.hpp translate to and from a `letterbox::message`.)
///
/// In the header's property-flags word, bit 15 is `content_type`, bit 14 `content_encoding`,
/// and so on down to bit 2 for `cluster_id`, in member order.
struct basic_properties {
    std::optional<std::string> content_type{};
    std::optional<std::string> content_encoding{};
    std::optional<field_table> headers{};
    /// 1 transient, 2 persistent (RabbitMQ treats anything but 2 as transient).
    std::optional<std::uint8_t> delivery_mode{};
    std::optional<std::uint8_t> priority{};
    std::optional<std::string> correlation_id{};
    std::optional<std::string> reply_to{};
    /// Per-message TTL in milliseconds, as decimal text.
    std::optional<std::string> expiration{};
    std::optional<std::string> message_id{};
    std::optional<letterbox::timestamp> timestamp{};
    std::optional<std::string> type{};
    std::optional<std::string> user_id{};
    std::optional<std::string> app_id{};
    /// Deprecated in 0-9-1; kept so that nothing a peer sends is lost.
    std::optional<std::string> cluster_id{};

    friend bool operator==(const basic_properties&, const basic_properties&) = default;
};

} // namespace letterbox::amqp::codec
