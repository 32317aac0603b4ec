// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// One event as a caller appends it to an `event_store`.
///
/// - `id` identifies the event. Take it from the caller's `message_id_generator`: when the
///   event is also published through the outbox (`event_sourced`), the message carries the
///   same id, so a consumer's inbox and the event store name the event alike.
/// - `type` names what happened ("deposited"); it is never empty.
/// - `data` is the event's body, as JSON text.
/// - `metadata` is JSON text about the event rather than of it: the causation, conversation
///   (letterbox's correlation of a flow) and trace headers of the message that caused it, as
///   `caused_by(cause, event)` writes them. Empty when there are none.
struct event_data {
    message_id id{};
    std::string type{};
    std::string data{};
    std::string metadata{};

    friend bool operator==(const event_data&, const event_data&) = default;
};

} // namespace letterbox
