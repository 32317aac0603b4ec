// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// The RabbitMQ version whose behaviour the in-memory broker reproduces.
///
/// Every behaviour that changed between versions is a field here, never an ad-hoc branch.
/// The baseline is RabbitMQ 3.10 (Debian 12's `rabbitmq-server` 3.10.8): where its behaviour
/// differs from the documentation, the fields follow what a real 3.10.8 broker was seen to do
/// (docs/in-memory-transport.md lists each one with its source).
struct broker_profile {
    std::string_view name = "3.10";

    /// 3.10: on each dead-lettering event the other `x-death` entries are reversed.
    bool reverse_x_death_on_event = true;
    /// 3.13+: `x-last-death-{reason,queue,exchange}` headers are written.
    bool x_last_death_headers = false;
    /// An `x-death` header published by a client is kept and extended as history: 3.10 (seen
    /// on 3.10.8) and 3.13.3+ (RabbitMQ 3.13.3's release notes, rabbitmq-server#11339, which
    /// restored it on 3.13.x). 3.13.0-3.13.2 and 4.0+ ignore it and a new history starts (4.0.1's
    /// release notes, "AMQP 0.9.1 x-death header").
    bool client_x_death_is_history = true;
    /// 3.13+: the `CC` header survives dead-lettering with an explicit dead-letter key.
    bool keep_cc_with_dead_letter_routing_key = false;
    /// 4.0+: quorum queues have a delivery limit of 20 unless one is set.
    std::optional<std::int64_t> quorum_default_delivery_limit;
    /// 4.0+: a negative `x-delivery-limit` (-1) means unlimited. 3.10 compares the delivery
    /// count with it as it is, so a quorum queue with -1 dead-letters (or drops) a message at
    /// its first return (seen on 3.10.8).
    bool quorum_negative_delivery_limit_is_unlimited = false;
    /// Up to 4.2 `basic.nack` with requeue increments `x-delivery-count`; 4.3 counts only
    /// rejects and lost channels (and adds `x-acquired-count`).
    bool nack_increments_delivery_count = true;
    bool acquired_count_header = false;
    /// 4.0+: every message returned to a quorum queue is served before the others, in return
    /// order. 3.10/3.13: only on a queue with `x-delivery-limit` (a nack, reject or recover
    /// requeue goes to the front, in return order; without a limit, to the back), and a closed
    /// channel's messages, which go back to the front in their original order (§0.3 1).
    bool quorum_returns_first = false;
    /// 4.3+: topic binding keys with more than this many `#` words are refused (406).
    std::optional<std::size_t> max_topic_hash_words;
    /// RabbitMQ 4.3 denies the deprecated feature `global_qos` by default: the channel turns
    /// `basic.qos(global=true)` into a per-consumer limit (4.3.0's release notes). Before, a
    /// global limit applies, and consuming from a quorum queue on such a channel is refused
    /// with 540 NOT_IMPLEMENTED, which closes the connection.
    bool global_qos_permitted = true;
    /// The default `max_message_size`.
    std::size_t max_message_size = std::size_t{128} * 1024 * 1024;
    /// 3.10 (observed): `basic.qos(global=false)` after `basic.qos(global=true)` clears the
    /// channel-wide limit.
    bool consumer_qos_clears_global_qos = true;
    /// The consumer (delivery acknowledgement) timeout, `consumer_timeout` in rabbitmq.conf
    /// (30 minutes by default on every version here): a channel whose oldest unacknowledged
    /// delivery, to a consumer or `basic.get`, is older than this at one of its ticks is closed
    /// with 406 PRECONDITION_FAILED, and its unacknowledged deliveries are requeued.
    /// `std::nullopt`: no timeout (the broker without the setting). A channel keeps the value
    /// it opened with, as RabbitMQ reads it at channel open (docs/in-memory-transport.md
    /// §2.18).
    std::optional<std::chrono::milliseconds> consumer_timeout = std::chrono::minutes{30};
    /// How often a channel checks its consumer timeout, `channel_tick_interval` in the
    /// broker's application environment (60 s by default): the close comes at the channel's
    /// first tick after the deadline. At least 1 ms (less counts as 1 ms).
    std::chrono::milliseconds channel_tick_interval{60'000};

    /// Debian 12's RabbitMQ: the baseline, checked against a real 3.10.8 broker.
    static constexpr broker_profile rabbitmq_3_10() noexcept {
        broker_profile p;
        p.name = "3.10";
        return p;
    }

    /// RabbitMQ 3.13.3 and later 3.13 releases.
    static constexpr broker_profile rabbitmq_3_13() noexcept {
        broker_profile p;
        p.name = "3.13";
        p.reverse_x_death_on_event = false;
        p.x_last_death_headers = true;
        p.keep_cc_with_dead_letter_routing_key = true;
        return p;
    }

    /// RabbitMQ 3.13.0 to 3.13.2: 3.13, but a client's `x-death` starts a new history.
    static constexpr broker_profile rabbitmq_3_13_0() noexcept {
        broker_profile p = rabbitmq_3_13();
        p.name = "3.13.0";
        p.client_x_death_is_history = false;
        return p;
    }

    static constexpr broker_profile rabbitmq_4_0() noexcept {
        broker_profile p = rabbitmq_3_13();
        p.name = "4.0";
        p.client_x_death_is_history = false;
        p.quorum_default_delivery_limit = 20;
        p.quorum_negative_delivery_limit_is_unlimited = true;
        p.quorum_returns_first = true;
        p.max_message_size = std::size_t{16} * 1024 * 1024;
        return p;
    }

    static constexpr broker_profile rabbitmq_4_3() noexcept {
        broker_profile p = rabbitmq_4_0();
        p.name = "4.3";
        p.nack_increments_delivery_count = false;
        p.acquired_count_header = true;
        p.max_topic_hash_words = 2;
        p.global_qos_permitted = false;
        return p;
    }

    /// Every profile above, oldest first.
    static constexpr std::array<broker_profile, 5> known() noexcept {
        return {rabbitmq_3_10(), rabbitmq_3_13_0(), rabbitmq_3_13(), rabbitmq_4_0(),
                rabbitmq_4_3()};
    }

    /// The profile whose `name` is `name` ("3.10", "3.13.0", "3.13", "4.0" or "4.3").
    static constexpr std::optional<broker_profile> named(std::string_view name) noexcept {
        for (const auto& p : known())
            if (p.name == name)
                return p;
        return std::nullopt;
    }
};

} // namespace letterbox::in_memory
