// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// Names of the consistent-hash exchange's arguments.
namespace args {
inline constexpr std::string_view hash_header = "hash-header";
inline constexpr std::string_view hash_property = "hash-property";
} // namespace args

/// The message properties a consistent-hash exchange can hash instead of the routing key.
enum class hashed_property { message_id, correlation_id, timestamp };

inline constexpr std::string_view to_string(hashed_property p) noexcept {
    switch (p) {
    case hashed_property::message_id:
        return "message_id";
    case hashed_property::correlation_id:
        return "correlation_id";
    case hashed_property::timestamp:
        return "timestamp";
    }
    return "message_id";
}

/// The typed form of a consistent-hash exchange's arguments (`exchange_type::consistent_hash`,
/// RabbitMQ's `rabbitmq_consistent_hash_exchange` plugin).
///
/// Such an exchange sends each message to exactly one of its destinations, chosen by a hash of
/// the message's routing key; or, with `hash_header`, of that header's value; or, with
/// `hash_property`, of that property. A binding's key is its weight, a decimal integer of at
/// least 1. A message without the header or property is not unroutable: every such message
/// goes to one and the same destination. docs/in-memory-transport.md §2.17 has the details.
///
/// Build a declaration's arguments with `to_table()`; a broker model reads them back with
/// `parse()`, which validates them as RabbitMQ 3.10 does.
///
/// Example:
///
///     topology::exchange x{.name = "orders", .type = topology::exchange_type::consistent_hash};
///     x.arguments = topology::consistent_hash_arguments{.hash_header = "customer"}.to_table();
struct consistent_hash_arguments {
    /// Hash the value of this header (its AMQP type counts: the text "1" and the integer 1
    /// may go to different destinations).
    std::optional<std::string> hash_header{};
    /// Hash this property (a timestamp as its decimal text).
    std::optional<hashed_property> hash_property{};

    friend bool operator==(const consistent_hash_arguments&,
                           const consistent_hash_arguments&) = default;

    /// The arguments as a field table.
    field_table to_table() const {
        field_table t;
        if (hash_header)
            t.set(args::hash_header, *hash_header);
        if (hash_property)
            t.set(args::hash_property, std::string(to_string(*hash_property)));
        return t;
    }

    /// Reads and validates arguments. On failure returns `std::nullopt`, sets `ec` to
    /// `errc::precondition_failed` and `reason` to RabbitMQ 3.10's text: `Unsupported
    /// property: P` for a property other than the three, `hash-header and hash-property are
    /// mutually exclusive` when both are given (that check comes first). A value that is not a
    /// longstr is refused with `ec` set to `errc::internal_error` and `reason` naming the
    /// argument: RabbitMQ's channel crashes on it, and the connection closes with 541
    /// `INTERNAL_ERROR` (seen on 3.10.8). Other arguments are ignored.
    static std::optional<consistent_hash_arguments> parse(const field_table& t, std::error_code& ec,
                                                          std::string& reason) {
        ec.clear();
        const auto* header = t.find(args::hash_header);
        const auto* property = t.find(args::hash_property);
        for (const auto* v : {header, property})
            if (v != nullptr && v->get_if<std::string>() == nullptr) {
                ec = errc::internal_error;
                reason = std::string(v == header ? args::hash_header : args::hash_property) +
                         " must be a longstr";
                return std::nullopt;
            }
        consistent_hash_arguments a;
        if (header != nullptr && property != nullptr) {
            ec = errc::precondition_failed;
            reason = "hash-header and hash-property are mutually exclusive";
            return std::nullopt;
        }
        if (header != nullptr)
            a.hash_header = *header->get_if<std::string>();
        if (property != nullptr) {
            const auto& name = *property->get_if<std::string>();
            for (auto p : {hashed_property::message_id, hashed_property::correlation_id,
                           hashed_property::timestamp})
                if (name == to_string(p))
                    a.hash_property = p;
            if (!a.hash_property) {
                ec = errc::precondition_failed;
                reason = "Unsupported property: " + name;
                return std::nullopt;
            }
        }
        return a;
    }
};

} // namespace letterbox::topology
