// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// Names of the queue arguments letterbox understands.
namespace args {
inline constexpr std::string_view dead_letter_exchange = "x-dead-letter-exchange";
inline constexpr std::string_view dead_letter_routing_key = "x-dead-letter-routing-key";
inline constexpr std::string_view dead_letter_strategy = "x-dead-letter-strategy";
inline constexpr std::string_view message_ttl = "x-message-ttl";
inline constexpr std::string_view expires = "x-expires";
inline constexpr std::string_view max_length = "x-max-length";
inline constexpr std::string_view max_length_bytes = "x-max-length-bytes";
inline constexpr std::string_view overflow = "x-overflow";
inline constexpr std::string_view delivery_limit = "x-delivery-limit";
inline constexpr std::string_view max_priority = "x-max-priority";
inline constexpr std::string_view queue_type = "x-queue-type";
inline constexpr std::string_view single_active_consumer = "x-single-active-consumer";
} // namespace args

/// `x-queue-type`. Streams are out of scope.
enum class queue_type { classic, quorum };

/// `x-overflow`: what happens when a publish would exceed `x-max-length(-bytes)`.
enum class overflow_behaviour {
    drop_head,         ///< drop (or dead-letter) the oldest ready messages
    reject_publish,    ///< refuse the new message (publisher gets a nack)
    reject_publish_dlx ///< refuse it and dead-letter it (classic queues)
};

/// `x-dead-letter-strategy`: how a quorum queue hands a message it dead-letters to its
/// dead-letter exchange (RabbitMQ 3.10+).
enum class dead_lettering {
    /// Published once, without a confirm: lost if the target is missing, full or unavailable
    /// at that moment. RabbitMQ's default, and the only strategy of classic queues.
    at_most_once,
    /// Kept in the source queue (not ready, still counted in its length) until every target
    /// queue confirmed it, and retried until then. Needs `x-overflow: reject-publish` and a
    /// dead-letter exchange; without either, RabbitMQ logs a warning and falls back to
    /// at-most-once or to no dead-lettering (seen on 3.10.8), so `queue::check` refuses both.
    at_least_once,
};

inline constexpr std::string_view to_string(dead_lettering d) noexcept {
    return d == dead_lettering::at_least_once ? "at-least-once" : "at-most-once";
}

inline constexpr std::string_view to_string(queue_type t) noexcept {
    return t == queue_type::quorum ? "quorum" : "classic";
}

inline constexpr std::string_view to_string(overflow_behaviour o) noexcept {
    switch (o) {
    case overflow_behaviour::drop_head:
        return "drop-head";
    case overflow_behaviour::reject_publish:
        return "reject-publish";
    case overflow_behaviour::reject_publish_dlx:
        return "reject-publish-dlx";
    }
    return "drop-head";
}

namespace detail {
/// The AMQP type name RabbitMQ writes in its reply texts (`long`, `longstr`, ...).
inline std::string_view amqp_type_name(const field_value& v) noexcept {
    constexpr std::string_view names[] = {
        "void",      "bool",        "byte",   "unsignedbyte", "short",  "unsignedshort",
        "signedint", "unsignedint", "long",   "float",        "double", "decimal",
        "longstr",   "timestamp",   "binary", "array",        "table"};
    return names[v.variant().index()];
}
} // namespace detail

/// The typed form of a queue's `x-` arguments.
///
/// Build a declaration's arguments with `to_table()`; a broker model reads them back with
/// `parse()`, which validates them as RabbitMQ does (406 PRECONDITION_FAILED on a bad type or
/// value). Unknown arguments are ignored, as RabbitMQ ignores them.
struct queue_arguments {
    std::optional<std::string> dead_letter_exchange{};
    std::optional<std::string> dead_letter_routing_key{};
    /// Quorum queues only (RabbitMQ 3.10+); see `dead_lettering` for what it needs.
    std::optional<dead_lettering> dead_letter_strategy{};
    std::optional<std::chrono::milliseconds> message_ttl{};
    std::optional<std::chrono::milliseconds> expires{};
    std::optional<std::int64_t> max_length{};
    std::optional<std::int64_t> max_length_bytes{};
    std::optional<overflow_behaviour> overflow{};
    /// Quorum queues only: a message returned (requeued, or its consumer's channel lost) more
    /// often than this is dead-lettered, with reason `delivery_limit`, or dropped when the
    /// queue has no dead-letter exchange. Negative depends on the version: unlimited on
    /// RabbitMQ 4.0+ (which spells it -1), but 3.10 dead-letters at the first return (seen on
    /// 3.10.8). Unset: unlimited before 4.0, 20 from 4.0 on.
    std::optional<std::int64_t> delivery_limit{};
    /// Classic queues only: a priority queue serving messages by their `priority` property,
    /// 0 to this maximum (at most 255); higher priorities count as the maximum.
    std::optional<std::uint8_t> max_priority{};
    /// One consumer at a time receives, the others wait to take over (RabbitMQ's
    /// `x-single-active-consumer`): with a consistent-hash exchange, per-group order across
    /// processes (docs/message-groups.md).
    std::optional<bool> single_active_consumer{};
    queue_type type = queue_type::classic;

    friend bool operator==(const queue_arguments&, const queue_arguments&) = default;

    /// The arguments as a field table, in a fixed order.
    field_table to_table() const {
        field_table t;
        if (dead_letter_exchange)
            t.set(args::dead_letter_exchange, *dead_letter_exchange);
        if (dead_letter_routing_key)
            t.set(args::dead_letter_routing_key, *dead_letter_routing_key);
        if (dead_letter_strategy)
            t.set(args::dead_letter_strategy, std::string(to_string(*dead_letter_strategy)));
        if (message_ttl)
            t.set(args::message_ttl, static_cast<std::int64_t>(message_ttl->count()));
        if (expires)
            t.set(args::expires, static_cast<std::int64_t>(expires->count()));
        if (max_length)
            t.set(args::max_length, *max_length);
        if (max_length_bytes)
            t.set(args::max_length_bytes, *max_length_bytes);
        if (overflow)
            t.set(args::overflow, std::string(to_string(*overflow)));
        if (delivery_limit)
            t.set(args::delivery_limit, *delivery_limit);
        if (max_priority)
            t.set(args::max_priority, std::int64_t{*max_priority});
        if (type != queue_type::classic)
            t.set(args::queue_type, std::string(to_string(type)));
        if (single_active_consumer)
            t.set(args::single_active_consumer, *single_active_consumer);
        return t;
    }

    /// Reads and validates arguments. On failure returns `std::nullopt`, sets `ec` to
    /// `errc::precondition_failed` and `reason` to RabbitMQ 3.10's explanation without the
    /// queue's name: `invalid arg 'x-max-length': {value_negative,-1}`, or for a dead-letter
    /// exchange that is no longstr `invalid type 'signedint' for arg 'x-dead-letter-exchange'`.
    static std::optional<queue_arguments> parse(const field_table& t, std::error_code& ec,
                                                std::string& reason) {
        queue_arguments a;
        ec.clear();
        auto fail = [&](std::string_view name, std::string_view why) {
            ec = errc::precondition_failed;
            reason = "invalid arg '" + std::string(name) + "': " + std::string(why);
            return std::nullopt;
        };
        auto text = [&](std::string_view name, std::optional<std::string>& out) -> bool {
            if (const auto* v = t.find(name)) {
                const auto* s = v->get_if<std::string>();
                if (!s)
                    return false;
                out = *s;
            }
            return true;
        };
        auto integer = [&](std::string_view name, std::optional<std::int64_t>& out,
                           bool allow_negative) -> int {
            if (const auto* v = t.find(name)) {
                auto i = v->as_integer();
                if (!i)
                    return 1; // wrong type
                if (*i < 0 && !allow_negative)
                    return 2; // negative
                out = *i;
            }
            return 0;
        };
        // The texts are RabbitMQ 3.10.8's (compared by tests/integration/amqp_differential.cpp).
        auto type_of = [&](std::string_view name) {
            return std::string(detail::amqp_type_name(*t.find(name)));
        };
        if (!text(args::dead_letter_exchange, a.dead_letter_exchange)) {
            ec = errc::precondition_failed;
            reason = "invalid type '" + type_of(args::dead_letter_exchange) + "' for arg '" +
                     std::string(args::dead_letter_exchange) + "'";
            return std::nullopt;
        }
        if (!text(args::dead_letter_routing_key, a.dead_letter_routing_key))
            return fail(args::dead_letter_routing_key,
                        "{unacceptable_type," + type_of(args::dead_letter_routing_key) + "}");
        if (a.dead_letter_routing_key && !a.dead_letter_exchange)
            return fail(args::dead_letter_routing_key, "routing_key_but_no_dlx_defined");
        std::optional<std::string> s;
        if (!text(args::dead_letter_strategy, s))
            return fail(args::dead_letter_strategy,
                        "{unacceptable_type," + type_of(args::dead_letter_strategy) + "}");
        if (s) {
            if (*s == "at-least-once")
                a.dead_letter_strategy = dead_lettering::at_least_once;
            else if (*s == "at-most-once")
                a.dead_letter_strategy = dead_lettering::at_most_once;
            else
                return fail(args::dead_letter_strategy, "invalid_dlx_strategy");
        }
        std::optional<std::int64_t> i;
        for (auto [name, negative_ok] :
             {std::pair{args::message_ttl, false}, std::pair{args::expires, false},
              std::pair{args::max_length, false}, std::pair{args::max_length_bytes, false},
              std::pair{args::delivery_limit, true}, std::pair{args::max_priority, false}}) {
            i.reset();
            switch (integer(name, i, negative_ok)) {
            case 1: // RabbitMQ 3.10 writes the AMQP type of the value
                return fail(name, "\"expected integer, got " + type_of(name) + "\"");
            case 2:
                return fail(name,
                            "{value_negative," + std::to_string(*t.find(name)->as_integer()) + "}");
            default:
                break;
            }
            if (!i)
                continue;
            if (name == args::message_ttl)
                a.message_ttl = std::chrono::milliseconds(*i);
            else if (name == args::expires) {
                if (*i == 0)
                    return fail(name, "{value_zero,0}");
                a.expires = std::chrono::milliseconds(*i);
            } else if (name == args::max_length)
                a.max_length = *i;
            else if (name == args::max_length_bytes)
                a.max_length_bytes = *i;
            else if (name == args::max_priority) {
                if (*i > 255) // RabbitMQ's ?MAX_SUPPORTED_PRIORITY
                    return fail(name, "{max_value_exceeded," + std::to_string(*i) + "}");
                a.max_priority = static_cast<std::uint8_t>(*i);
            } else
                a.delivery_limit = *i;
        }
        s.reset();
        if (!text(args::overflow, s))
            return fail(args::overflow, "{unacceptable_type," + type_of(args::overflow) + "}");
        if (s) {
            if (*s == "drop-head")
                a.overflow = overflow_behaviour::drop_head;
            else if (*s == "reject-publish")
                a.overflow = overflow_behaviour::reject_publish;
            else if (*s == "reject-publish-dlx")
                a.overflow = overflow_behaviour::reject_publish_dlx;
            else
                return fail(args::overflow, "invalid_overflow");
        }
        s.reset();
        if (!text(args::queue_type, s))
            return fail(args::queue_type, "{unacceptable_type," + type_of(args::queue_type) + "}");
        if (s) {
            if (*s == "classic")
                a.type = queue_type::classic;
            else if (*s == "quorum")
                a.type = queue_type::quorum;
            else
                return fail(args::queue_type, "\"unsupported queue type '" + *s + "'\"");
        }
        // A value that is not a bool is left to the broker, whose refusal (406, reported after
        // every other argument) names the value's type.
        if (const auto* v = t.find(args::single_active_consumer))
            if (const auto* b = v->get_if<bool>())
                a.single_active_consumer = *b;
        return a;
    }
};

} // namespace letterbox::topology
