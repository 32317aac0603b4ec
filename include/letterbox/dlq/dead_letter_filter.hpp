// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/store_time.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

/// Which dead-lettered messages an operation applies to. Every criterion is optional and
/// every one that is set must match; the default filter matches everything.
///
/// - `reason`, `exception_type`, `message_type`: equal to the entry's `reason`,
///   `exception_type` and `type`;
/// - `since` (inclusive) and `until` (exclusive): the entry's `dead_lettered_at`, or its
///   `last_failure` when it has none, is in `[since, until)`; an entry with neither time
///   does not match a time bound;
/// - `headers`: for each `(name, value)`, the message has the header `name` and its text
///   equals `value`: strings as they are, integers in decimal, booleans as `true`/`false`,
///   floating-point numbers as JSON writes them; tables, arrays and the other types never
///   match;
/// - `ids`: the entry is named by one of these: a message id (UUID text, compared
///   case-insensitively) names every copy of that message; a handle (`content-...`, see
///   `dead_letter_entry::handle`) names exactly one entry. The nil id is refused: it names no
///   message, only the absence of one.
///
/// Example:
///
///     letterbox::dlq::dead_letter_filter f;
///     f.exception_type = "std::invalid_argument";
///     f.headers = {{"x-tenant", "acme"}};
///     f.since = clock.wall_now() - std::chrono::hours{24};
struct dead_letter_filter {
    std::optional<std::string> reason{};
    std::optional<std::string> exception_type{};
    std::optional<std::string> message_type{};
    std::optional<store_time> since{};
    std::optional<store_time> until{};
    std::vector<std::pair<std::string, std::string>> headers{};
    std::vector<std::string> ids{};

    /// Whether `e` meets every criterion that is set.
    bool matches(const dead_letter_entry& e) const;

    /// Whether at least one criterion is set, so that the filter can select less than the
    /// whole queue. A filter read from `{}`, `null`, `{"ids": []}`, `{"headers": {}}` or
    /// `{"reason": null}` has none: it matches every entry. Operations that remove or replay
    /// messages (the CLI, the HTTP endpoint) refuse such a filter unless the caller asked for
    /// the whole queue explicitly.
    bool has_criterion() const noexcept {
        return reason || exception_type || message_type || since || until || !headers.empty() ||
               !ids.empty();
    }

    /// Reads a filter from JSON, as the HTTP endpoint and the CLI receive it: `null` or an
    /// object with any of
    ///
    ///     {"reason": "...", "exception_type": "...", "message_type": "...",
    ///      "since": "2026-01-01T00:00:00Z", "until": "2026-01-02T00:00:00.500Z",
    ///      "headers": {"x-tenant": "acme", "x-priority": 3},
    ///      "ids": ["0b6f...-...", ...]}
    ///
    /// A member that is `null` is absent. Header values may be strings, numbers or booleans
    /// (compared as text, see above). Throws `letterbox::error` with `errc::invalid_argument`
    /// and a message naming the offending member for anything else: an unknown member, a
    /// member of the wrong type, a time that is not RFC 3339 UTC, an id that is neither a
    /// UUID nor a handle, the nil UUID, or `since` later than `until`.
    static dead_letter_filter from_json(const nlohmann::json& j);
};

} // namespace letterbox::dlq

#if LETTERBOX_HEADER_ONLY
#include <letterbox/dlq/impl/dead_letter_filter.hpp>
#endif
