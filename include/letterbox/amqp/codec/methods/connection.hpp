// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <cstdint>
#include <string>
#include <string_view>

/// The methods of the AMQP 0-9-1 connection class (10): the handshake, tuning, close, and
/// RabbitMQ's blocked/unblocked. These methods travel on channel 0 only.
///
/// Each struct holds the method's arguments, with the spec's defaults; reserved arguments
/// are not members (they are written as zero or empty and skipped when read). The static
/// members give the wire identity: `class_id`, `method_id`, `name` ("class.method") and
/// `has_content` (a content header and body frames follow the method).
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// connection.start (10, 10): The server's greeting: protocol version, server properties (with the
/// `capabilities` table), SASL mechanisms and locales (space-separated).
struct connection_start {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 10;
    static constexpr std::string_view name = "connection.start";
    static constexpr bool has_content = false;

    std::uint8_t version_major = 0;
    std::uint8_t version_minor = 9;
    field_table server_properties{};
    std::string mechanisms{};
    std::string locales{};

    friend bool operator==(const connection_start&, const connection_start&) = default;
};

/// connection.start-ok (10, 11): The client's answer: client properties (with the `capabilities`
/// table), the chosen SASL mechanism, its response (PLAIN: `\0user\0password`) and locale.
struct connection_start_ok {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 11;
    static constexpr std::string_view name = "connection.start-ok";
    static constexpr bool has_content = false;

    field_table client_properties{};
    std::string mechanism{"PLAIN"};
    std::string response{};
    std::string locale{"en_US"};

    friend bool operator==(const connection_start_ok&, const connection_start_ok&) = default;
};

/// connection.secure (10, 20): A SASL challenge.
struct connection_secure {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 20;
    static constexpr std::string_view name = "connection.secure";
    static constexpr bool has_content = false;

    std::string challenge{};

    friend bool operator==(const connection_secure&, const connection_secure&) = default;
};

/// connection.secure-ok (10, 21): The answer to a SASL challenge.
struct connection_secure_ok {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 21;
    static constexpr std::string_view name = "connection.secure-ok";
    static constexpr bool has_content = false;

    std::string response{};

    friend bool operator==(const connection_secure_ok&, const connection_secure_ok&) = default;
};

/// connection.tune (10, 30): The server's limits: 0 means "no limit" (see negotiate.hpp).
struct connection_tune {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 30;
    static constexpr std::string_view name = "connection.tune";
    static constexpr bool has_content = false;

    std::uint16_t channel_max = 0;
    std::uint32_t frame_max = 0;
    std::uint16_t heartbeat = 0;

    friend bool operator==(const connection_tune&, const connection_tune&) = default;
};

/// connection.tune-ok (10, 31): The limits the client chose (see negotiate.hpp); heartbeat in
/// seconds.
struct connection_tune_ok {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 31;
    static constexpr std::string_view name = "connection.tune-ok";
    static constexpr bool has_content = false;

    std::uint16_t channel_max = 0;
    std::uint32_t frame_max = 0;
    std::uint16_t heartbeat = 0;

    friend bool operator==(const connection_tune_ok&, const connection_tune_ok&) = default;
};

/// connection.open (10, 40): Opens the virtual host. (The reserved `capabilities` shortstr and
/// `insist` bit are written empty and false, and skipped when read.)
struct connection_open {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 40;
    static constexpr std::string_view name = "connection.open";
    static constexpr bool has_content = false;

    std::string virtual_host{"/"};

    friend bool operator==(const connection_open&, const connection_open&) = default;
};

/// connection.open-ok (10, 41): The virtual host is open. (The reserved `known-hosts` shortstr is
/// skipped.)
struct connection_open_ok {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 41;
    static constexpr std::string_view name = "connection.open-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const connection_open_ok&, const connection_open_ok&) = default;
};

/// connection.close (10, 50): Closes the connection with a reply code (`amqp_reply_code`), a text,
/// and the class and method that caused it (0 when none).
struct connection_close {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 50;
    static constexpr std::string_view name = "connection.close";
    static constexpr bool has_content = false;

    std::uint16_t reply_code = 0;
    std::string reply_text{};
    std::uint16_t failing_class_id = 0;
    std::uint16_t failing_method_id = 0;

    friend bool operator==(const connection_close&, const connection_close&) = default;
};

/// connection.close-ok (10, 51): Confirms connection.close.
struct connection_close_ok {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 51;
    static constexpr std::string_view name = "connection.close-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const connection_close_ok&, const connection_close_ok&) = default;
};

/// connection.blocked (10, 60): RabbitMQ extension: the server stopped reading publishes (a
/// resource alarm); `reason` says why.
struct connection_blocked {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 60;
    static constexpr std::string_view name = "connection.blocked";
    static constexpr bool has_content = false;

    std::string reason{};

    friend bool operator==(const connection_blocked&, const connection_blocked&) = default;
};

/// connection.unblocked (10, 61): RabbitMQ extension: the alarm cleared; publishing may resume.
struct connection_unblocked {
    static constexpr std::uint16_t class_id = 10;
    static constexpr std::uint16_t method_id = 61;
    static constexpr std::string_view name = "connection.unblocked";
    static constexpr bool has_content = false;

    friend bool operator==(const connection_unblocked&, const connection_unblocked&) = default;
};

} // namespace letterbox::amqp::codec
