// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <cstdint>
#include <string>
#include <string_view>

/// The methods of the AMQP 0-9-1 basic class (60): qos, consumers, publish, deliveries, get,
/// acknowledgements and RabbitMQ's nack.
///
/// Each struct holds the method's arguments, with the spec's defaults; reserved arguments
/// are not members (they are written as zero or empty and skipped when read). The static
/// members give the wire identity: `class_id`, `method_id`, `name` ("class.method") and
/// `has_content` (a content header and body frames follow the method).
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// basic.qos (60, 10): Sets the prefetch window (RabbitMQ ignores `prefetch_size`; `global` applies
/// it per channel).
struct basic_qos {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 10;
    static constexpr std::string_view name = "basic.qos";
    static constexpr bool has_content = false;

    std::uint32_t prefetch_size = 0;
    std::uint16_t prefetch_count = 0;
    bool global = false;

    friend bool operator==(const basic_qos&, const basic_qos&) = default;
};

/// basic.qos-ok (60, 11): Confirms basic.qos.
struct basic_qos_ok {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 11;
    static constexpr std::string_view name = "basic.qos-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const basic_qos_ok&, const basic_qos_ok&) = default;
};

/// basic.consume (60, 20): Starts a consumer (an empty tag asks the server to generate one).
struct basic_consume {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 20;
    static constexpr std::string_view name = "basic.consume";
    static constexpr bool has_content = false;

    std::string queue{};
    std::string consumer_tag{};
    bool no_local = false;
    bool no_ack = false;
    bool exclusive = false;
    bool no_wait = false;
    field_table arguments{};

    friend bool operator==(const basic_consume&, const basic_consume&) = default;
};

/// basic.consume-ok (60, 21): Confirms basic.consume with the consumer tag.
struct basic_consume_ok {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 21;
    static constexpr std::string_view name = "basic.consume-ok";
    static constexpr bool has_content = false;

    std::string consumer_tag{};

    friend bool operator==(const basic_consume_ok&, const basic_consume_ok&) = default;
};

/// basic.cancel (60, 30): Ends a consumer. RabbitMQ also sends it to the client when the queue goes
/// away (consumer cancel notify).
struct basic_cancel {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 30;
    static constexpr std::string_view name = "basic.cancel";
    static constexpr bool has_content = false;

    std::string consumer_tag{};
    bool no_wait = false;

    friend bool operator==(const basic_cancel&, const basic_cancel&) = default;
};

/// basic.cancel-ok (60, 31): Confirms basic.cancel.
struct basic_cancel_ok {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 31;
    static constexpr std::string_view name = "basic.cancel-ok";
    static constexpr bool has_content = false;

    std::string consumer_tag{};

    friend bool operator==(const basic_cancel_ok&, const basic_cancel_ok&) = default;
};

/// basic.publish (60, 40): Publishes a message; a content header and body frames follow.
struct basic_publish {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 40;
    static constexpr std::string_view name = "basic.publish";
    static constexpr bool has_content = true;

    std::string exchange{};
    std::string routing_key{};
    bool mandatory = false;
    bool immediate = false;

    friend bool operator==(const basic_publish&, const basic_publish&) = default;
};

/// basic.return (60, 50): Returns an unroutable mandatory message (reply code 312 NO_ROUTE);
/// content follows.
struct basic_return {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 50;
    static constexpr std::string_view name = "basic.return";
    static constexpr bool has_content = true;

    std::uint16_t reply_code = 0;
    std::string reply_text{};
    std::string exchange{};
    std::string routing_key{};

    friend bool operator==(const basic_return&, const basic_return&) = default;
};

/// basic.deliver (60, 60): Delivers a message to a consumer; content follows.
struct basic_deliver {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 60;
    static constexpr std::string_view name = "basic.deliver";
    static constexpr bool has_content = true;

    std::string consumer_tag{};
    std::uint64_t delivery_tag = 0;
    bool redelivered = false;
    std::string exchange{};
    std::string routing_key{};

    friend bool operator==(const basic_deliver&, const basic_deliver&) = default;
};

/// basic.get (60, 70): Fetches one message synchronously.
struct basic_get {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 70;
    static constexpr std::string_view name = "basic.get";
    static constexpr bool has_content = false;

    std::string queue{};
    bool no_ack = false;

    friend bool operator==(const basic_get&, const basic_get&) = default;
};

/// basic.get-ok (60, 71): Answers basic.get with a message; content follows.
struct basic_get_ok {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 71;
    static constexpr std::string_view name = "basic.get-ok";
    static constexpr bool has_content = true;

    std::uint64_t delivery_tag = 0;
    bool redelivered = false;
    std::string exchange{};
    std::string routing_key{};
    std::uint32_t message_count = 0;

    friend bool operator==(const basic_get_ok&, const basic_get_ok&) = default;
};

/// basic.get-empty (60, 72): Answers basic.get when the queue is empty. (The reserved `cluster-id`
/// shortstr is skipped.)
struct basic_get_empty {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 72;
    static constexpr std::string_view name = "basic.get-empty";
    static constexpr bool has_content = false;

    friend bool operator==(const basic_get_empty&, const basic_get_empty&) = default;
};

/// basic.ack (60, 80): Acknowledges a delivery (client) or confirms a publish (server, in confirm
/// mode); `multiple` covers every tag up to this one.
struct basic_ack {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 80;
    static constexpr std::string_view name = "basic.ack";
    static constexpr bool has_content = false;

    std::uint64_t delivery_tag = 0;
    bool multiple = false;

    friend bool operator==(const basic_ack&, const basic_ack&) = default;
};

/// basic.reject (60, 90): Rejects one delivery, requeueing it or not.
struct basic_reject {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 90;
    static constexpr std::string_view name = "basic.reject";
    static constexpr bool has_content = false;

    std::uint64_t delivery_tag = 0;
    bool requeue = true;

    friend bool operator==(const basic_reject&, const basic_reject&) = default;
};

/// basic.recover (60, 110): Redelivers every unacknowledged message of the channel.
struct basic_recover {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 110;
    static constexpr std::string_view name = "basic.recover";
    static constexpr bool has_content = false;

    bool requeue = false;

    friend bool operator==(const basic_recover&, const basic_recover&) = default;
};

/// basic.recover-ok (60, 111): Confirms basic.recover.
struct basic_recover_ok {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 111;
    static constexpr std::string_view name = "basic.recover-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const basic_recover_ok&, const basic_recover_ok&) = default;
};

/// basic.nack (60, 120): RabbitMQ extension: rejects deliveries (client) or refuses publishes
/// (server, in confirm mode); `multiple` as for basic.ack.
struct basic_nack {
    static constexpr std::uint16_t class_id = 60;
    static constexpr std::uint16_t method_id = 120;
    static constexpr std::string_view name = "basic.nack";
    static constexpr bool has_content = false;

    std::uint64_t delivery_tag = 0;
    bool multiple = false;
    bool requeue = true;

    friend bool operator==(const basic_nack&, const basic_nack&) = default;
};

} // namespace letterbox::amqp::codec
