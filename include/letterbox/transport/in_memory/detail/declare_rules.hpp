// SPDX-License-Identifier: BSL-1.0
#pragma once

// What RabbitMQ 3.10 checks when an exchange or a queue is declared again, a quorum queue is
// declared, or a headers exchange is bound, and the texts it answers with. Private to the
// in-memory broker (broker_state.hpp).
// Each rule was compared with a real 3.10.8 broker by tests/integration/amqp_differential.cpp.

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

/// The queue arguments a redeclaration of a classic queue must repeat with the same value, in
/// the order RabbitMQ 3.10 compares them: the first that differs is the one reported (seen on
/// 3.10.8). The model acts on only some of them; the others are stored and compared all the
/// same. Any other argument may differ from the queue's: `x-delivery-limit`,
/// `x-dead-letter-strategy`, `x-max-in-memory-length`, `x-max-in-memory-bytes`, and the
/// quorum and stream ones. A quorum queue has a list of its own (below).
inline constexpr std::array<std::string_view, 13> compared_queue_arguments = {
    "x-expires",
    "x-message-ttl",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-max-length",
    "x-max-length-bytes",
    "x-max-priority",
    "x-overflow",
    "x-queue-mode",
    "x-queue-version",
    "x-single-active-consumer",
    "x-queue-type",
    "x-queue-master-locator",
};

/// The same for a quorum queue: its type's `queue_arguments` capability, in its order
/// (rabbit_quorum_queue:capabilities/0 of 3.10). Seen on 3.10.8: a quorum queue declared
/// again with another `x-delivery-limit` is refused (`inequivalent arg 'x-delivery-limit' ...:
/// received '7' but current is '5'`), and `x-dead-letter-strategy` is compared before it.
inline constexpr std::array<std::string_view, 15> compared_quorum_queue_arguments = {
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-dead-letter-strategy",
    "x-expires",
    "x-max-length",
    "x-max-length-bytes",
    "x-max-in-memory-length",
    "x-max-in-memory-bytes",
    "x-overflow",
    "x-single-active-consumer",
    "x-queue-type",
    "x-quorum-initial-group-size",
    "x-delivery-limit",
    "x-message-ttl",
    "x-queue-leader-locator",
};

/// The queue argument that turns on single active consumer. A new queue's value must be a bool
/// (rabbit_amqqueue:check_single_active_consumer_arg); `false` means off.
inline constexpr std::string_view single_active_consumer_argument = "x-single-active-consumer";

/// The exchange argument a redeclaration must repeat (rabbit_exchange:assert_args_equivalence).
inline constexpr std::string_view alternate_exchange_argument = "alternate-exchange";

/// The queue arguments a 3.10 quorum queue refuses with 406 `invalid arg 'A' for queue 'Q' in
/// vhost '/' of queue type rabbit_quorum_queue`: those another queue type (classic or stream)
/// takes and a quorum queue does not (seen on 3.10.8).
inline constexpr std::array<std::string_view, 7> quorum_refused_arguments = {
    "x-max-priority",
    "x-queue-mode",
    "x-queue-master-locator",
    "x-queue-version",
    "x-max-age",
    "x-initial-cluster-size",
    "x-stream-max-segment-size-bytes",
};

/// The same for a 3.10 classic queue (`... of queue type rabbit_classic_queue`): the arguments
/// only quorum queues or streams take (seen on 3.10.8).
inline constexpr std::array<std::string_view, 9> classic_refused_arguments = {
    "x-delivery-limit",       "x-dead-letter-strategy",          "x-max-in-memory-length",
    "x-max-in-memory-bytes",  "x-quorum-initial-group-size",     "x-max-age",
    "x-initial-cluster-size", "x-stream-max-segment-size-bytes", "x-queue-leader-locator",
};

/// The first argument of `arguments`, in their order, that a queue of type `quorum` (else
/// classic) refuses; empty when there is none. RabbitMQ checks this after it validated the
/// arguments' values, and before a quorum queue's properties.
inline std::string_view refused_argument(const field_table& arguments, bool quorum) {
    // Not a lambda over a structured binding: clang 14 cannot capture one.
    const auto refused = [](const auto& list, std::string_view name) {
        for (auto r : list)
            if (r == name)
                return true;
        return false;
    };
    for (const auto& entry : arguments) {
        const std::string_view name = entry.first;
        if (quorum ? refused(quorum_refused_arguments, name)
                   : refused(classic_refused_arguments, name))
            return name;
    }
    return {};
}

/// RabbitMQ's reply text for `name` and `text`, as a channel.close or connection.close carries
/// it: `NAME - text`, cut to 252 bytes and `...` when longer than a shortstr's 255
/// (rabbit_binary_generator:amqp_exception_explanation).
inline std::string reply_text(std::string_view name, std::string_view text) {
    std::string out;
    out.reserve(name.size() + 3 + text.size());
    out.append(name).append(" - ").append(text);
    if (out.size() > 255) {
        out.resize(252);
        out += "...";
    }
    return out;
}

/// The AMQP type name RabbitMQ writes in reply texts (`long`, `longstr`, ...).
inline std::string_view amqp_type_text(const field_value& v) {
    return topology::detail::amqp_type_name(v);
}

/// A value as Erlang's `~s` (binaries) or `~p` (other terms) prints it, for the values an
/// argument holds in practice: text as is, integers in decimal, booleans as `true`/`false`.
inline std::string erlang_text(const field_value& v) {
    if (const auto* s = v.get_if<std::string>())
        return *s;
    if (const auto i = v.as_integer())
        return std::to_string(*i);
    if (const auto* b = v.get_if<bool>())
        return *b ? "true" : "false";
    return "<" + std::string(amqp_type_text(v)) + ">";
}

/// The two sides of an "inequivalent arg" text (rabbit_misc:equivalence_fail). When both sides
/// have the argument, each is its value in quotes (`'2000'`); when one lacks it, the present one
/// is `the value '2000' of type 'long'` and the missing one `none`.
inline std::string equivalence_side(const field_value* v, bool both_present) {
    if (v == nullptr)
        return "none";
    if (both_present)
        return "'" + erlang_text(*v) + "'";
    return "the value '" + erlang_text(*v) + "' of type '" + std::string(amqp_type_text(*v)) + "'";
}

/// Whether two values of one argument are equivalent: integers of any width by value,
/// everything else equal in type and value (rabbit_misc:assert_args_equivalence compares the
/// type class, and every integer type is one class).
inline bool equivalent_argument(const field_value* a, const field_value* b) {
    if (a == nullptr || b == nullptr)
        return a == b;
    if (const auto ai = a->as_integer())
        return ai == b->as_integer();
    return *a == *b;
}

/// Whether two `x-queue-type` values name the same type: a missing one means `classic`, so a
/// queue declared without it may be declared again with `classic` (seen on 3.10.8).
inline bool same_queue_type(const field_value* a, const field_value* b) {
    auto type_of = [](const field_value* v) -> std::optional<std::string> {
        if (v == nullptr)
            return std::string("classic");
        if (const auto* s = v->get_if<std::string>())
            return *s;
        return std::nullopt;
    };
    const auto ta = type_of(a);
    const auto tb = type_of(b);
    return ta && tb ? *ta == *tb : equivalent_argument(a, b);
}

/// The name of the alternate exchange declared with `arguments`, if any (a longstr).
inline std::optional<std::string> alternate_exchange_of(const field_table& arguments) {
    if (const auto* v = arguments.find(alternate_exchange_argument))
        if (const auto* s = v->get_if<std::string>())
            return *s;
    return std::nullopt;
}

// RMQ-RT-10, rabbit_exchange_type_headers:validate_binding: `x-match` must be a longstr
// naming one of the four modes (3.10 has all-with-x and any-with-x, §0.3 fact 12), else the
// binding is refused with 406. The texts follow RabbitMQ's format strings (not yet checked
// against a 3.10.8 broker).
inline std::string invalid_x_match(const field_table& args) {
    const auto* v = args.find("x-match");
    if (!v)
        return {};
    const auto* mode = v->get_if<std::string>();
    if (!mode)
        return "Invalid x-match field type " + std::string(amqp_type_text(*v)) +
               "; expected longstr";
    if (*mode == "all" || *mode == "any" || *mode == "all-with-x" || *mode == "any-with-x")
        return {};
    return "Invalid x-match field value <<\"" + *mode +
           "\">>; expected all, any, all-with-x, or any-with-x";
}

} // namespace letterbox::in_memory::detail
