// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// What a consumer with message groups does with a message that has no group key.
enum class missing_group_key : std::uint8_t {
    /// Refuse it: nothing runs, and the consumer rejects it to the queue's dead-letter exchange,
    /// counted as dead-lettered with the reason `missing-group-key` (`errc::missing_group_key`).
    /// It is never handled in an order nobody chose. The default.
    refuse,
    /// Handle it as a group of its own: it waits for no other message and none waits for it.
    own_group,
};

/// Whether a failed message of a group may be overtaken by the later messages of its group.
enum class group_order : std::uint8_t {
    /// The group waits for its head. Until a message is settled for good (acknowledged, or
    /// dead-lettered), no later message of its group runs: an in-process retry holds it, and a
    /// broker redelivery (`middleware::redelivery`, which would take it out of the line into a
    /// retry queue) is carried out in place: the consumer keeps the delivery, waits the same
    /// delay, and handles the copy it would have published (its attempt count and failure
    /// headers), so the attempts still end. The default.
    strict,
    /// A message that leaves for a retry queue leaves the line: the group's next message runs
    /// at once, and the retried one takes its place behind the messages that arrived meanwhile.
    /// Order holds between the messages that do not fail; a slow retry blocks nobody.
    relaxed,
};

/// Message groups for a `consumer` (docs/message-groups.md): the messages of one group (the
/// same key) are handled one at a time, in the order the queue delivered them; those of
/// different groups are handled in parallel, up to `concurrency` at once. Off unless `key` is
/// set; `group_key::standard{}` reads the `x-letterbox-group` header, which the producer sets or
/// the outbox's relay sets from the event's aggregate.
struct group_options {
    /// Finds a message's group; no key (`std::nullopt`, or an empty text) means none. It must
    /// be deterministic and must not throw: it runs on the transport's executor for each
    /// delivery.
    std::function<std::optional<std::string>(const message&)> key{};
    /// What to do with a message that has no group.
    missing_group_key on_missing_key = missing_group_key::refuse;
    /// How many groups are handled at once; 0 takes the consumer's prefetch (or no bound with
    /// an unlimited prefetch). Only a handler that does not hold the transport's executor (a
    /// coroutine, or a `handler_executor`) runs more than one at a time.
    std::size_t concurrency = 0;
    /// Whether a retried message keeps its group waiting.
    group_order order = group_order::strict;

    bool enabled() const noexcept { return static_cast<bool>(key); }
};

} // namespace letterbox
