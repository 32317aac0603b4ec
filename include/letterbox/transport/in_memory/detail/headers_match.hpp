// SPDX-License-Identifier: BSL-1.0
#pragma once

// How a headers exchange matches a message against a binding's arguments. Private to the
// in-memory broker (broker_state.hpp).

#include <letterbox/basic_properties.hpp>
#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/message.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

// RabbitMQ compares a binding value with a header value as Erlang terms (`==`): numbers by
// value whatever their AMQP types (int 7 matches long 7, unsigned byte 7, double 7.0 and
// the timestamp 7, which is an integer too; float 2.5 matches double 2.5), everything else
// only an equal value of the same type (a decimal is no number here, string "7" is not 7).
// Seen on 3.10.8 (tests/integration/amqp_differential.cpp).
inline std::optional<std::int64_t> as_erlang_integer(const field_value& v) {
    if (const auto* t = v.get_if<timestamp>())
        return static_cast<std::int64_t>(t->time_since_epoch().count());
    return v.as_integer();
}

inline std::optional<double> as_erlang_number(const field_value& v) {
    if (const auto i = as_erlang_integer(v))
        return static_cast<double>(*i);
    if (const auto* f = v.get_if<float>())
        return static_cast<double>(*f);
    if (const auto* d = v.get_if<double>())
        return *d;
    return std::nullopt;
}

inline bool header_value_matches(const field_value& bound, const field_value& sent) {
    if (const auto a = as_erlang_integer(bound), b = as_erlang_integer(sent); a && b)
        return *a == *b; // exact, also beyond 2^53
    if (const auto a = as_erlang_number(bound), b = as_erlang_number(sent); a && b)
        return *a == *b;
    return bound == sent;
}

// Matches against the headers a real broker would see: `msg`'s, without those that
// to_basic_properties turns into properties (is_wire_header).
inline bool headers_match(const field_table& binding_args, const message& msg) {
    const auto& headers = msg.headers;
    std::string mode = "all";
    if (auto m = binding_args.get<std::string>("x-match"))
        mode = *m;
    const bool with_x = mode == "all-with-x" || mode == "any-with-x";
    const bool all = mode == "all" || mode == "all-with-x";
    bool any_matched = false;
    for (const auto& [key, value] : binding_args) {
        if (key == "x-match" || (!with_x && key.starts_with("x-")))
            continue;
        const auto* h = headers.find(key);
        if (h && key.starts_with("x-letterbox-amqp-") && !is_wire_header(msg, key))
            h = nullptr;
        const bool ok = h && (value.is_void() || header_value_matches(value, *h));
        if (all && !ok)
            return false;
        any_matched |= ok;
    }
    return all || any_matched;
}

} // namespace letterbox::in_memory::detail
