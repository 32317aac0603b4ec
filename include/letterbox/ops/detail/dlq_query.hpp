// SPDX-License-Identifier: BSL-1.0
#pragma once

// The dead-letter routes of server_state: the filter and selection they read from the query
// string or the body, and the JSON of the entries they list.

#include <letterbox/config.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/dlq/dead_letter_filter.hpp>
#include <letterbox/ops/detail/query_string.hpp>
#include <letterbox/ops/detail/responses.hpp>
#include <letterbox/ops/detail/route_support.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

namespace route {

/// The filter members of a query string, as the JSON `dead_letter_filter::from_json` reads:
/// reason, exception_type, message_type, since, until, header.<name>, id (repeatable). Other
/// parameters go to `other(name, value)`, which returns false to refuse them (and sets
/// `refused`).
template <class Other>
std::optional<nlohmann::json> filter_json(const parsed_target& t, Other&& other,
                                          std::optional<response>& refused) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, value] : t.params) {
        if (name == "reason" || name == "exception_type" || name == "message_type" ||
            name == "since" || name == "until") {
            if (j.contains(name)) {
                refused = bad_parameter(name, "given more than once");
                return std::nullopt;
            }
            j[name] = value;
        } else if (name.starts_with("header.") && name.size() > 7) {
            j["headers"][name.substr(7)] = value;
        } else if (name == "id") {
            j["ids"].push_back(value);
        } else if (!other(name, value)) {
            return std::nullopt;
        }
    }
    return j;
}

/// What a replay or a purge acts on: the filter (from the query string or the body, not both)
/// and whether the caller asked for the whole queue (`?all=true`). Anything else in the query
/// string is refused.
struct selection {
    dlq::dead_letter_filter filter{};
    bool all = false;
};

inline std::optional<selection> read_selection(const parsed_target& t, const request& req,
                                               std::optional<response>& refused) {
    selection out;
    auto from_query = filter_json(
        t,
        [&](const std::string& name, const std::string& value) {
            if (name == "all" && (value == "true" || value == "false")) {
                out.all = value == "true";
                return true;
            }
            refused = bad_parameter(
                name, name == "all" ? "use all=true"
                                    : "unknown; use reason, exception_type, message_type, since, "
                                      "until, header.<name>, id, all=true");
            return false;
        },
        refused);
    if (!from_query)
        return std::nullopt;
    nlohmann::json j = std::move(*from_query);
    if (!req.body().empty()) {
        if (!j.empty()) {
            refused = error_response(status::bad_request, "ambiguous_filter",
                                     "give the filter in the query string or in the body, not "
                                     "both");
            return std::nullopt;
        }
        j = nlohmann::json::parse(req.body(), nullptr, false);
        if (j.is_discarded()) {
            refused =
                error_response(status::bad_request, "malformed_json", "the body is not valid JSON");
            return std::nullopt;
        }
    }
    try {
        out.filter = dlq::dead_letter_filter::from_json(j);
    } catch (const std::exception& ex) {
        refused = error_response(status::bad_request, "bad_filter", ex.what());
        return std::nullopt;
    }
    return out;
}

/// The key that names an entry in URLs and `ids` filters: its handle, which names exactly that
/// entry (its id names every copy of the message, and an entry without an id has none).
inline std::string entry_key(const nlohmann::json& entry) {
    if (const auto it = entry.find("handle");
        it != entry.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
        return it->get<std::string>();
    return entry.value("id", std::string());
}

inline std::string message_url(const std::string& queue, const std::string& key) {
    return "/dlq/" + percent_encode(queue) + "/messages/" + percent_encode(key);
}

/// The JSON of `e` for a listing: its body cut to `max_body` bytes (at a character boundary:
/// a cut inside a UTF-8 sequence is moved before it), with `body_truncated`, `body_bytes` and
/// `message_url`. The encoding (`body_encoding`) is that of what is shown.
inline nlohmann::json listing_json(dlq::dead_letter_entry& e, const std::string& queue,
                                   std::size_t max_body) {
    const auto size = e.msg.body.size();
    const bool cut = size > max_body;
    if (cut) {
        std::size_t at = max_body;
        for (int back = 0;
             back < 3 && at > 0 && (static_cast<unsigned char>(e.msg.body[at]) & 0xC0) == 0x80;
             ++back)
            --at;
        e.msg.body.resize(at);
        e.msg.body.shrink_to_fit();
    }
    auto j = e.to_json();
    j["body_truncated"] = cut;
    j["body_bytes"] = size;
    j["message_url"] = message_url(queue, entry_key(j));
    return j;
}

} // namespace route

} // namespace letterbox::ops::detail
