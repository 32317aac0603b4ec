// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/dlq/detail/entry_handle.hpp>
#include <letterbox/dlq/detail/text.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

namespace detail {

/// The `x-death` reason of a consumer's reject or nack without requeue. A value the broker
/// writes, not a header name.
inline constexpr std::string_view rejected_reason = "rejected";

LETTERBOX_DECL std::uint32_t to_count(std::int64_t n) noexcept {
    if (n <= 0)
        return 0;
    if (n > std::int64_t{std::numeric_limits<std::uint32_t>::max()})
        return std::numeric_limits<std::uint32_t>::max();
    return static_cast<std::uint32_t>(n);
}

LETTERBOX_DECL std::optional<std::uint32_t> header_count(const field_table& table,
                                                         std::string_view name) {
    if (const auto* v = table.find(name))
        if (const auto n = v->as_integer())
            return to_count(*n);
    return std::nullopt;
}

LETTERBOX_DECL std::optional<store_time> header_time(const field_table& table,
                                                     std::string_view name) {
    if (const auto text = header_text(table, name))
        return letterbox::detail::parse_rfc3339(*text);
    return std::nullopt;
}

LETTERBOX_DECL std::optional<std::string> table_text(const field_table& t, std::string_view name) {
    return header_text(t, name);
}

/// The `x-death` tables of `headers`, skipping entries that are not tables.
LETTERBOX_DECL std::vector<const field_table*> x_death_entries(const field_table& hs) {
    std::vector<const field_table*> out;
    if (const auto* v = hs.find(headers::x_death))
        if (const auto* entries = v->get_if<field_array>())
            for (const auto& e : *entries)
                if (const auto* t = e.get_if<field_table>())
                    out.push_back(t);
    return out;
}

/// The `x-death` entry of the first death: the one whose queue and reason are
/// `x-first-death-queue` and `x-first-death-reason`; else the last (oldest) entry.
LETTERBOX_DECL const field_table* first_death(const field_table& hs,
                                              const std::vector<const field_table*>& entries) {
    if (entries.empty())
        return nullptr;
    const auto queue = header_text(hs, headers::x_first_death_queue);
    const auto reason = header_text(hs, headers::x_first_death_reason);
    if (queue && reason)
        for (const auto* e : entries)
            if (table_text(*e, headers::x_death_field::queue) == queue &&
                table_text(*e, headers::x_death_field::reason) == reason)
                return e;
    return entries.back();
}

LETTERBOX_DECL nlohmann::json time_json(const std::optional<store_time>& t) {
    if (!t)
        return nullptr;
    return letterbox::detail::format_rfc3339(*t);
}

} // namespace detail

LETTERBOX_DECL dead_letter_entry dead_letter_entry::from(const message& m) {
    namespace h = letterbox::headers;
    const auto& hs = m.headers;
    dead_letter_entry e;
    e.msg = m;
    if (!m.id.is_nil())
        e.id = letterbox::to_string(m.id);
    e.handle = detail::content_handle(m);
    e.type = m.type;
    const auto deaths = detail::x_death_entries(hs);

    if (auto r = detail::header_text(hs, h::death_reason))
        e.reason = std::move(*r);
    else if (auto fr = detail::header_text(hs, h::x_first_death_reason))
        e.reason = std::move(*fr);
    e.exception_type = detail::header_text(hs, h::exception_type).value_or("");
    e.exception_message = detail::header_text(hs, h::exception_message).value_or("");

    if (const auto n = detail::header_count(hs, h::attempts)) {
        e.attempts = *n;
    } else {
        std::uint64_t sum = 0;
        for (const auto* d : deaths)
            if (detail::table_text(*d, h::x_death_field::reason) == detail::rejected_reason)
                if (const auto n = detail::header_count(*d, h::x_death_field::count))
                    sum += *n;
        e.attempts = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(sum, std::numeric_limits<std::uint32_t>::max()));
    }

    e.first_failure = detail::header_time(hs, h::first_failure_time);
    e.last_failure = detail::header_time(hs, h::last_failure_time);
    e.dead_lettered_at = detail::header_time(hs, h::dead_lettered_time);
    if (!e.dead_lettered_at)
        for (const auto* d : deaths)
            if (const auto t = d->get<timestamp>(h::x_death_field::time))
                if (!e.dead_lettered_at || store_time(*t) > *e.dead_lettered_at)
                    e.dead_lettered_at = store_time(*t);

    const auto* first = detail::first_death(hs, deaths);
    if (auto x = detail::header_text(hs, h::original_exchange))
        e.original_exchange = std::move(*x);
    else if (auto fx = detail::header_text(hs, h::x_first_death_exchange))
        e.original_exchange = std::move(*fx);
    if (auto k = detail::header_text(hs, h::original_routing_key)) {
        e.original_routing_key = std::move(*k);
    } else if (first != nullptr) {
        if (const auto* keys = first->find(h::x_death_field::routing_keys))
            if (const auto* array = keys->get_if<field_array>(); array && !array->empty())
                if (const auto* key = array->front().get_if<std::string>())
                    e.original_routing_key = *key;
    }
    if (auto q = detail::header_text(hs, h::original_queue))
        e.original_queue = std::move(*q);
    else if (auto fq = detail::header_text(hs, h::x_first_death_queue))
        e.original_queue = std::move(*fq);

    e.consumer_id = detail::header_text(hs, h::consumer_id).value_or("");
    e.replay_count = detail::header_count(hs, h::replay_count).value_or(0);
    return e;
}

LETTERBOX_DECL nlohmann::json dead_letter_entry::to_json() const {
    nlohmann::json j = nlohmann::json::object();
    if (id.empty())
        j["id"] = nullptr;
    else
        j["id"] = id;
    j["handle"] = handle;
    j["type"] = type;
    j["reason"] = reason;
    j["exception"] = {{"type", exception_type}, {"message", exception_message}};
    j["attempts"] = attempts;
    j["first_failure_time"] = detail::time_json(first_failure);
    j["last_failure_time"] = detail::time_json(last_failure);
    j["dead_lettered_time"] = detail::time_json(dead_lettered_at);
    j["original_exchange"] = original_exchange;
    j["original_routing_key"] = original_routing_key;
    j["original_queue"] = original_queue;
    j["consumer_id"] = consumer_id;
    j["replay_count"] = replay_count;
    nlohmann::json headers_json;
    letterbox::to_json(headers_json, msg.headers);
    j["headers"] = std::move(headers_json);
    if (msg.properties.content_type)
        j["content_type"] = *msg.properties.content_type;
    else
        j["content_type"] = nullptr;
    // Header text is not trusted to be UTF-8; the body is checked on its own below.
    detail::make_valid_utf8(j);
    if (detail::is_text(msg.body)) {
        j["body"] = msg.body;
        j["body_encoding"] = "utf-8";
    } else {
        j["body"] = detail::base64_encode(msg.body);
        j["body_encoding"] = "base64";
    }
    return j;
}

} // namespace letterbox::dlq
