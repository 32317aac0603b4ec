// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

/// One dead-lettered message, with what letterbox and the broker recorded about its failure:
/// what the dead-letter operations browse, filter, export and replay.
///
/// `from` reads letterbox's own headers first (`letterbox/headers.hpp`: the dead-letter
/// middleware writes them) and falls back on the broker's `x-death` history for a message the
/// broker dead-lettered by itself (a consumer's reject without requeue, a TTL, an overflow):
/// - `reason`: `x-letterbox-death-reason`, else `x-first-death-reason`, else empty;
/// - `attempts`: `x-letterbox-attempts`, else the sum of the `count`s of the `x-death`
///   entries whose reason is `rejected`;
/// - `first_failure`, `last_failure`: `x-letterbox-first-failure-time` and
///   `x-letterbox-last-failure-time` (RFC 3339);
/// - `dead_lettered_at`: `x-letterbox-dead-lettered-time`, else the newest `x-death` `time`;
/// - `original_exchange`, `original_routing_key`, `original_queue`: the
///   `x-letterbox-original-*` headers, else `x-first-death-exchange`, the first routing key of
///   the first death's `x-death` entry, and `x-first-death-queue`.
///
/// A header that is missing, of another type or unparsable leaves its field empty (or zero):
/// the text of a header is never trusted.
struct dead_letter_entry {
    /// The whole message, as it sits in the dead-letter queue (headers and body included).
    message msg{};
    /// `msg.id` as text (canonical lower-case UUID); empty when the message has no id (the nil
    /// id: its publisher set no AMQP `message-id`). Copies of one message share it.
    std::string id{};
    /// Names this one entry of its queue, for the operations that act on a single entry (show,
    /// replay or purge one; the dashboard's buttons), whether or not the message has an id:
    /// `content-` and 32 hex digits of a digest of the message's content (its id, type,
    /// properties, headers and body), and, for the n-th of several identical copies in the
    /// queue, `-n`. It stays the same from one browse to the next while the queue holds the
    /// entry (a quorum queue's `x-delivery-count` is left out of the digest). Dead-letter
    /// operations number identical copies in queue order; `from` cannot (it sees one message)
    /// and gives the number-less form.
    std::string handle{};
    /// `msg.type`.
    std::string type{};
    std::string reason{};
    std::string exception_type{};
    std::string exception_message{};
    std::uint32_t attempts = 0;
    std::optional<store_time> first_failure{};
    std::optional<store_time> last_failure{};
    std::optional<store_time> dead_lettered_at{};
    std::string original_exchange{};
    std::string original_routing_key{};
    std::string original_queue{};
    /// The consumer id (inbox key) that failed to handle it, if letterbox recorded one.
    std::string consumer_id{};
    /// How many times it was replayed from a dead-letter queue before.
    std::uint32_t replay_count = 0;

    /// Parses the entry of a dead-lettered message (see above). Never throws for bad headers.
    static dead_letter_entry from(const message& m);

    /// One JSON object for tools, the CLI and the HTTP endpoint:
    ///
    ///     {"id", "handle", "type", "reason", "exception": {"type", "message"}, "attempts",
    ///      "first_failure_time", "last_failure_time", "dead_lettered_time",
    ///      "original_exchange", "original_routing_key", "original_queue", "consumer_id",
    ///      "replay_count", "headers", "content_type", "body", "body_encoding"}
    ///
    /// `id` is null for a message without an id. Times are RFC 3339 UTC text or null; `headers` is
    /// the field table's JSON form
    /// (`letterbox::to_json`); `content_type` is null when the message has none. The body is a
    /// string with `"body_encoding": "utf-8"` when it is text (well-formed UTF-8 without
    /// control characters other than tab, CR and LF: JSON bodies are), else base64 with
    /// `"body_encoding": "base64"`. Text taken from headers that is not well-formed UTF-8 has
    /// the offending bytes replaced by U+FFFD, so `dump()` never throws.
    nlohmann::json to_json() const;
};

} // namespace letterbox::dlq

#if LETTERBOX_HEADER_ONLY
#include <letterbox/dlq/impl/dead_letter_entry.hpp>
#endif
