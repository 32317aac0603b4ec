// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/caused_by.hpp>
#include <letterbox/config.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// How a participant's step went, as its reply says.
enum class saga_outcome { success, failure };

/// A participant's reply to a saga's `command`, with a new id from `ids`: addressed to the
/// command's `reply_to` (through the default exchange), with its `correlation_id`, the saga's
/// headers copied, and the outcome; a failure carries `reason`. Send it with the participant's
/// effect, through its outbox, so that the reply exists exactly when the effect does. The
/// body is empty unless the caller sets one (a reservation id for the step's `on_reply`). The
/// reply is `caused_by` the command: it joins the command's trace and conversation.
inline message saga_reply(const message& command, message_id_generator& ids, saga_outcome outcome,
                          std::string_view reason = {}) {
    message reply;
    reply.id = ids();
    reply.type = command.type + ".reply";
    reply.routing_key = command.properties.reply_to.value_or(std::string());
    reply.properties.correlation_id = command.properties.correlation_id;
    for (const auto name :
         {headers::saga_type, headers::saga_id, headers::saga_step, headers::saga_phase})
        if (const auto* value = command.headers.find(name))
            reply.headers.set(name, *value);
    const bool ok = outcome == saga_outcome::success;
    reply.headers.set(headers::saga_outcome, std::string(ok ? "success" : "failure"));
    if (!ok)
        reply.headers.set(headers::saga_reason, std::string(reason));
    caused_by(command, reply);
    return reply;
}

} // namespace letterbox
