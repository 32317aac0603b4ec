// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/dlq/dead_letter_filter.hpp>
#include <letterbox/dlq/detail/entry_handle.hpp>
#include <letterbox/dlq/detail/text.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

namespace detail {

[[noreturn]] LETTERBOX_DECL void bad_filter(const std::string& what) {
    throw letterbox::error(errc::invalid_argument, "dead_letter_filter: " + what);
}

LETTERBOX_DECL std::string json_type(const nlohmann::json& j) {
    return j.type_name();
}

LETTERBOX_DECL std::optional<std::string> filter_string(const nlohmann::json& j,
                                                        std::string_view key) {
    if (j.is_null())
        return std::nullopt;
    if (!j.is_string())
        bad_filter("\"" + std::string(key) + "\" must be a string, not " + json_type(j));
    return j.get<std::string>();
}

LETTERBOX_DECL std::optional<store_time> filter_time(const nlohmann::json& j,
                                                     std::string_view key) {
    const auto text = filter_string(j, key);
    if (!text)
        return std::nullopt;
    const auto t = letterbox::detail::parse_rfc3339(*text);
    if (!t)
        bad_filter("\"" + std::string(key) + "\" must be an RFC 3339 UTC time such as " +
                   "2026-01-31T09:15:02Z or 2026-01-31T09:15:02.250Z, not \"" +
                   to_valid_utf8(*text) + "\"");
    return t;
}

/// The text a JSON header value is compared as (see `value_text`).
LETTERBOX_DECL std::string filter_header_value(const std::string& name, const nlohmann::json& v) {
    if (v.is_string())
        return v.get<std::string>();
    if (v.is_boolean())
        return v.get<bool>() ? "true" : "false";
    if (v.is_number_integer() && !v.is_number_unsigned())
        return std::to_string(v.get<std::int64_t>());
    if (v.is_number_unsigned())
        return std::to_string(v.get<std::uint64_t>());
    if (v.is_number_float())
        return v.dump();
    bad_filter("header \"" + to_valid_utf8(name) +
               "\" must have a string, number or boolean value, not " + json_type(v));
}

// A handle names one entry; a message id every copy of a message that has one (never the
// id-less ones, whatever the nil id's text says).
LETTERBOX_DECL bool same_id(const std::string& wanted, const dead_letter_entry& e) {
    if (wanted.starts_with(handle_prefix))
        return wanted == e.handle;
    if (e.msg.id.is_nil())
        return false;
    if (wanted == e.id)
        return true;
    const auto parsed = parse_message_id(wanted);
    return parsed && *parsed == e.msg.id;
}

/// The canonical form of an id criterion: a handle as it is, a message id in canonical text.
LETTERBOX_DECL std::string filter_id(const std::string& text) {
    if (is_handle(text))
        return text;
    const auto parsed = parse_message_id(text);
    if (!parsed)
        bad_filter("\"ids\" holds \"" + to_valid_utf8(text) +
                   "\", which is neither a message id (a UUID) nor an entry's handle "
                   "(content-<32 hex digits>, as listed)");
    if (parsed->is_nil())
        bad_filter("\"ids\" holds the nil id, which every message without a message id "
                   "carries: name such an entry by its handle (content-..., as listed)");
    return letterbox::to_string(*parsed);
}

} // namespace detail

LETTERBOX_DECL bool dead_letter_filter::matches(const dead_letter_entry& e) const {
    if (reason && e.reason != *reason)
        return false;
    if (exception_type && e.exception_type != *exception_type)
        return false;
    if (message_type && e.type != *message_type)
        return false;
    if (since || until) {
        const auto when = e.dead_lettered_at ? e.dead_lettered_at : e.last_failure;
        if (!when)
            return false;
        if (since && *when < *since)
            return false;
        if (until && *when >= *until)
            return false;
    }
    for (const auto& [name, value] : headers) {
        const auto* v = e.msg.headers.find(name);
        if (v == nullptr)
            return false;
        const auto text = detail::value_text(*v);
        if (!text || *text != value)
            return false;
    }
    if (!ids.empty() && std::none_of(ids.begin(), ids.end(),
                                     [&](const auto& id) { return detail::same_id(id, e); }))
        return false;
    return true;
}

LETTERBOX_DECL dead_letter_filter dead_letter_filter::from_json(const nlohmann::json& j) {
    dead_letter_filter f;
    if (j.is_null())
        return f;
    if (!j.is_object())
        detail::bad_filter("expected a JSON object, not " + detail::json_type(j));
    for (const auto& [key, value] : j.items()) {
        if (key == "reason") {
            f.reason = detail::filter_string(value, key);
        } else if (key == "exception_type") {
            f.exception_type = detail::filter_string(value, key);
        } else if (key == "message_type") {
            f.message_type = detail::filter_string(value, key);
        } else if (key == "since") {
            f.since = detail::filter_time(value, key);
        } else if (key == "until") {
            f.until = detail::filter_time(value, key);
        } else if (key == "headers") {
            if (value.is_null())
                continue;
            if (!value.is_object())
                detail::bad_filter("\"headers\" must be an object of header names to values, not " +
                                   detail::json_type(value));
            for (const auto& [name, v] : value.items())
                f.headers.emplace_back(name, detail::filter_header_value(name, v));
        } else if (key == "ids") {
            if (value.is_null())
                continue;
            if (!value.is_array())
                detail::bad_filter("\"ids\" must be an array of message ids, not " +
                                   detail::json_type(value));
            for (const auto& id : value) {
                if (!id.is_string())
                    detail::bad_filter("\"ids\" must hold strings, not " + detail::json_type(id));
                f.ids.push_back(detail::filter_id(id.get_ref<const std::string&>()));
            }
        } else {
            detail::bad_filter("unknown member \"" + detail::to_valid_utf8(key) +
                               "\" (expected reason, exception_type, message_type, since, until, "
                               "headers or ids)");
        }
    }
    if (f.since && f.until && *f.since > *f.until)
        detail::bad_filter("\"since\" is later than \"until\"");
    return f;
}

} // namespace letterbox::dlq
