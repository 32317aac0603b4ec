// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <cstdint>
#include <string>
#include <string_view>

/// The methods of the AMQP 0-9-1 queue class (50): declare, bind, unbind, purge and delete.
///
/// Each struct holds the method's arguments, with the spec's defaults; reserved arguments
/// are not members (they are written as zero or empty and skipped when read). The static
/// members give the wire identity: `class_id`, `method_id`, `name` ("class.method") and
/// `has_content` (a content header and body frames follow the method).
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// queue.declare (50, 10): Declares a queue (an empty name asks the server to generate one).
struct queue_declare {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 10;
    static constexpr std::string_view name = "queue.declare";
    static constexpr bool has_content = false;

    std::string queue{};
    bool passive = false;
    bool durable = false;
    bool exclusive = false;
    bool auto_delete = false;
    bool no_wait = false;
    field_table arguments{};

    friend bool operator==(const queue_declare&, const queue_declare&) = default;
};

/// queue.declare-ok (50, 11): Confirms queue.declare with the queue's name and counts.
struct queue_declare_ok {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 11;
    static constexpr std::string_view name = "queue.declare-ok";
    static constexpr bool has_content = false;

    std::string queue{};
    std::uint32_t message_count = 0;
    std::uint32_t consumer_count = 0;

    friend bool operator==(const queue_declare_ok&, const queue_declare_ok&) = default;
};

/// queue.bind (50, 20): Binds a queue to an exchange.
struct queue_bind {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 20;
    static constexpr std::string_view name = "queue.bind";
    static constexpr bool has_content = false;

    std::string queue{};
    std::string exchange{};
    std::string routing_key{};
    bool no_wait = false;
    field_table arguments{};

    friend bool operator==(const queue_bind&, const queue_bind&) = default;
};

/// queue.bind-ok (50, 21): Confirms queue.bind.
struct queue_bind_ok {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 21;
    static constexpr std::string_view name = "queue.bind-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const queue_bind_ok&, const queue_bind_ok&) = default;
};

/// queue.purge (50, 30): Removes every ready message of a queue.
struct queue_purge {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 30;
    static constexpr std::string_view name = "queue.purge";
    static constexpr bool has_content = false;

    std::string queue{};
    bool no_wait = false;

    friend bool operator==(const queue_purge&, const queue_purge&) = default;
};

/// queue.purge-ok (50, 31): Confirms queue.purge with the number of messages removed.
struct queue_purge_ok {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 31;
    static constexpr std::string_view name = "queue.purge-ok";
    static constexpr bool has_content = false;

    std::uint32_t message_count = 0;

    friend bool operator==(const queue_purge_ok&, const queue_purge_ok&) = default;
};

/// queue.delete (50, 40): Deletes a queue.
struct queue_delete {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 40;
    static constexpr std::string_view name = "queue.delete";
    static constexpr bool has_content = false;

    std::string queue{};
    bool if_unused = false;
    bool if_empty = false;
    bool no_wait = false;

    friend bool operator==(const queue_delete&, const queue_delete&) = default;
};

/// queue.delete-ok (50, 41): Confirms queue.delete with the number of messages deleted.
struct queue_delete_ok {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 41;
    static constexpr std::string_view name = "queue.delete-ok";
    static constexpr bool has_content = false;

    std::uint32_t message_count = 0;

    friend bool operator==(const queue_delete_ok&, const queue_delete_ok&) = default;
};

/// queue.unbind (50, 50): Removes a queue binding (this method has no no-wait bit).
struct queue_unbind {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 50;
    static constexpr std::string_view name = "queue.unbind";
    static constexpr bool has_content = false;

    std::string queue{};
    std::string exchange{};
    std::string routing_key{};
    field_table arguments{};

    friend bool operator==(const queue_unbind&, const queue_unbind&) = default;
};

/// queue.unbind-ok (50, 51): Confirms queue.unbind.
struct queue_unbind_ok {
    static constexpr std::uint16_t class_id = 50;
    static constexpr std::uint16_t method_id = 51;
    static constexpr std::string_view name = "queue.unbind-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const queue_unbind_ok&, const queue_unbind_ok&) = default;
};

} // namespace letterbox::amqp::codec
