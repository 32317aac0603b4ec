// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/event_metadata.hpp>
#include <letterbox/error.hpp>
#include <letterbox/event_data.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/trace_context.hpp>

#include <algorithm>
#include <cstddef>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Makes `effect` a consequence of `cause`, the message being handled when `effect` is sent
/// (published, or added to an outbox): what lets a trace follow one order through every
/// service it touches (docs/tracing.md).
///
/// - **Trace**: `effect` joins `cause`'s trace (its `traceparent`'s trace id and flags), as a
///   span of its own whose id comes from `effect`'s message id, and carries `cause`'s
///   `tracestate` unchanged. A `cause` without a valid `traceparent` starts the trace: the trace
///   id is `cause`'s message id, sampled.
/// - **Causation**: `effect`'s `x-letterbox-causation-id` is `cause`'s message id.
/// - **Conversation**: `effect`'s `x-letterbox-conversation-id` is `cause`'s, carried over
///   unchanged, or `cause`'s message id when `cause` began the conversation.
///
/// The AMQP `correlation_id`, the reply address and the body are left alone. Throws
/// `letterbox::error(errc::invalid_argument)` when `effect` has no message id yet (its span is
/// made from it): give it one first (`make_message` does).
inline void caused_by(const message& cause, message& effect) {
    if (effect.id.is_nil())
        throw error(errc::invalid_argument, "caused_by: the effect has no message id yet");
    trace_context t;
    if (const auto parent = trace_context_of(cause)) {
        t.trace_id = parent->trace_id;
        t.flags = parent->flags;
    } else {
        std::copy(cause.id.begin(), cause.id.end(), t.trace_id.begin());
        t.flags = 1;
    }
    // The span id: the effect's id's last 8 bytes (the random ones of a time-ordered id), or
    // its first 8 should those all be zero.
    std::copy(effect.id.begin() + 8, effect.id.end(), t.span_id.begin());
    if (std::all_of(t.span_id.begin(), t.span_id.end(), [](auto b) { return b == 0; }))
        std::copy(effect.id.begin(), effect.id.begin() + 8, t.span_id.begin());
    if (std::all_of(t.trace_id.begin(), t.trace_id.end(), [](auto b) { return b == 0; }))
        t.trace_id = {1}; // a nil cause id: any valid trace id (the specification's zero is not)
    effect.headers.set(headers::traceparent, t.to_string());
    if (const auto* state = cause.headers.find(headers::tracestate))
        effect.headers.set(headers::tracestate, *state);
    else
        effect.headers.erase(headers::tracestate);
    if (!cause.id.is_nil())
        effect.headers.set(headers::causation_id, letterbox::to_string(cause.id));
    else
        effect.headers.erase(headers::causation_id);
    auto conversation = cause.headers.get<std::string>(headers::conversation_id);
    if (!conversation && !cause.id.is_nil())
        conversation = letterbox::to_string(cause.id);
    if (conversation)
        effect.headers.set(headers::conversation_id, *conversation);
}

/// Makes `effect`, an event about to be appended to an `event_store`, a consequence of
/// `cause`: its `metadata` becomes (is replaced by) the trace, causation and conversation
/// headers that
/// `caused_by(cause, m)` sets on a message `m` with the event's id. When the event is
/// published (`publishing_event_store`), its message carries them, so the trace goes on
/// through the event. Throws `letterbox::error(errc::invalid_argument)` when `effect` has no
/// id yet.
inline void caused_by(const message& cause, event_data& effect) {
    message m;
    m.id = effect.id;
    caused_by(cause, m);
    effect.metadata = detail::event_metadata_of(m);
}

/// Makes `root` the first message of a conversation, caused by no message: its trace id is its
/// own message id (sampled), its span comes from that id too, and its
/// `x-letterbox-conversation-id` is its id. What `caused_by` then carries to everything it
/// causes. Throws `letterbox::error(errc::invalid_argument)` when `root` has no message id.
inline void begin_conversation(message& root) {
    // A stand-in cause with `root`'s own id and no trace: the trace and the conversation are
    // then `root`'s id, and the causation, which would name `root` itself, is dropped.
    message stand_in;
    stand_in.id = root.id;
    caused_by(stand_in, root);
    root.headers.erase(headers::causation_id);
}

} // namespace letterbox
