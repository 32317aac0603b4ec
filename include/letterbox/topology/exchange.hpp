// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// The four AMQP 0-9-1 exchange types RabbitMQ ships, and the consistent-hash exchange of the
/// `rabbitmq_consistent_hash_exchange` plugin (`x-consistent-hash`), which the broker offers only
/// with the plugin enabled; its arguments are `consistent_hash_arguments`.
enum class exchange_type { direct, fanout, topic, headers, consistent_hash };

inline constexpr std::string_view to_string(exchange_type t) noexcept {
    switch (t) {
    case exchange_type::direct:
        return "direct";
    case exchange_type::fanout:
        return "fanout";
    case exchange_type::topic:
        return "topic";
    case exchange_type::headers:
        return "headers";
    case exchange_type::consistent_hash:
        return "x-consistent-hash";
    }
    return "direct";
}

inline constexpr std::optional<exchange_type> parse_exchange_type(std::string_view s) noexcept {
    if (s == "direct")
        return exchange_type::direct;
    if (s == "fanout")
        return exchange_type::fanout;
    if (s == "topic")
        return exchange_type::topic;
    if (s == "headers")
        return exchange_type::headers;
    if (s == "x-consistent-hash")
        return exchange_type::consistent_hash;
    return std::nullopt;
}

/// An exchange declaration (`exchange.declare`). Declaring is idempotent when the properties
/// are equivalent; otherwise the broker refuses it with 406 PRECONDITION_FAILED.
struct exchange {
    std::string name{};
    exchange_type type = exchange_type::direct;
    bool durable = true;
    bool auto_delete = false;
    bool internal = false;
    field_table arguments{};

    friend bool operator==(const exchange&, const exchange&) = default;
};

} // namespace letterbox::topology
