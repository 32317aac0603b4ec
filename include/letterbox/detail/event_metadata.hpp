// SPDX-License-Identifier: BSL-1.0
#pragma once

// An event's metadata (`event_data::metadata`) and the message headers it comes from and goes
// back to: a JSON object of the trace and causation headers, names as keys, texts as values.

#include <letterbox/config.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// The headers an event's metadata keeps.
inline constexpr std::array<std::string_view, 4> event_metadata_headers{
    headers::traceparent, headers::tracestate, headers::causation_id, headers::conversation_id};

/// The metadata of an event caused like `m`: its trace and causation headers, as JSON text;
/// empty when it has none.
inline std::string event_metadata_of(const message& m) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto name : event_metadata_headers)
        if (const auto value = m.headers.get<std::string>(name))
            j[std::string(name)] = *value;
    return j.empty() ? std::string() : j.dump();
}

/// Sets on `m` the headers that `metadata` (an event's) holds. Metadata that is not a JSON
/// object, and members that are not text, are ignored: the message is sent without them.
inline void apply_event_metadata(std::string_view metadata, message& m) {
    if (metadata.empty())
        return;
    const auto j = nlohmann::json::parse(metadata, nullptr, false);
    if (!j.is_object())
        return;
    for (const auto name : event_metadata_headers) {
        const auto it = j.find(std::string(name));
        if (it != j.end() && it->is_string())
            m.headers.set(name, it->get<std::string>());
    }
}

} // namespace letterbox::detail
