// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <cstdint>
#include <string>
#include <string_view>

/// The methods of the AMQP 0-9-1 exchange class (40): declare and delete, and RabbitMQ's
/// exchange-to-exchange bind/unbind.
///
/// Each struct holds the method's arguments, with the spec's defaults; reserved arguments
/// are not members (they are written as zero or empty and skipped when read). The static
/// members give the wire identity: `class_id`, `method_id`, `name` ("class.method") and
/// `has_content` (a content header and body frames follow the method).
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// exchange.declare (40, 10): Declares an exchange (`passive`: only check that it exists).
/// `internal` and `auto_delete` are RabbitMQ's un-deprecated bits.
struct exchange_declare {
    static constexpr std::uint16_t class_id = 40;
    static constexpr std::uint16_t method_id = 10;
    static constexpr std::string_view name = "exchange.declare";
    static constexpr bool has_content = false;

    std::string exchange{};
    std::string type{"direct"};
    bool passive = false;
    bool durable = false;
    bool auto_delete = false;
    bool internal = false;
    bool no_wait = false;
    field_table arguments{};

    friend bool operator==(const exchange_declare&, const exchange_declare&) = default;
};

/// exchange.declare-ok (40, 11): Confirms exchange.declare.
struct exchange_declare_ok {
    static constexpr std::uint16_t class_id = 40;
    static constexpr std::uint16_t method_id = 11;
    static constexpr std::string_view name = "exchange.declare-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const exchange_declare_ok&, const exchange_declare_ok&) = default;
};

/// exchange.delete (40, 20): Deletes an exchange.
struct exchange_delete {
    static constexpr std::uint16_t class_id = 40;
    static constexpr std::uint16_t method_id = 20;
    static constexpr std::string_view name = "exchange.delete";
    static constexpr bool has_content = false;

    std::string exchange{};
    bool if_unused = false;
    bool no_wait = false;

    friend bool operator==(const exchange_delete&, const exchange_delete&) = default;
};

/// exchange.delete-ok (40, 21): Confirms exchange.delete.
struct exchange_delete_ok {
    static constexpr std::uint16_t class_id = 40;
    static constexpr std::uint16_t method_id = 21;
    static constexpr std::string_view name = "exchange.delete-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const exchange_delete_ok&, const exchange_delete_ok&) = default;
};

/// exchange.bind (40, 30): RabbitMQ extension: binds exchange `destination` to exchange `source`.
struct exchange_bind {
    static constexpr std::uint16_t class_id = 40;
    static constexpr std::uint16_t method_id = 30;
    static constexpr std::string_view name = "exchange.bind";
    static constexpr bool has_content = false;

    std::string destination{};
    std::string source{};
    std::string routing_key{};
    bool no_wait = false;
    field_table arguments{};

    friend bool operator==(const exchange_bind&, const exchange_bind&) = default;
};

/// exchange.bind-ok (40, 31): Confirms exchange.bind.
struct exchange_bind_ok {
    static constexpr std::uint16_t class_id = 40;
    static constexpr std::uint16_t method_id = 31;
    static constexpr std::string_view name = "exchange.bind-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const exchange_bind_ok&, const exchange_bind_ok&) = default;
};

/// exchange.unbind (40, 40): RabbitMQ extension: removes an exchange-to-exchange binding.
struct exchange_unbind {
    static constexpr std::uint16_t class_id = 40;
    static constexpr std::uint16_t method_id = 40;
    static constexpr std::string_view name = "exchange.unbind";
    static constexpr bool has_content = false;

    std::string destination{};
    std::string source{};
    std::string routing_key{};
    bool no_wait = false;
    field_table arguments{};

    friend bool operator==(const exchange_unbind&, const exchange_unbind&) = default;
};

/// exchange.unbind-ok (40, 51): Confirms exchange.unbind (method id 51, not 41: RabbitMQ's
/// numbering).
struct exchange_unbind_ok {
    static constexpr std::uint16_t class_id = 40;
    static constexpr std::uint16_t method_id = 51;
    static constexpr std::string_view name = "exchange.unbind-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const exchange_unbind_ok&, const exchange_unbind_ok&) = default;
};

} // namespace letterbox::amqp::codec
