// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/message_type.hpp>
#include <letterbox/payload.hpp>

#include <string>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A saga's command to a participant: `payload` as JSON, under its type's name, to
/// `routing_key` on `exchange` (the default exchange: the queue named `routing_key`). Its id,
/// headers and reply address are the orchestrator's to set (`saga_step::invoke`). Throws
/// `letterbox::error(errc::payload_unencodable)` when the payload cannot be encoded.
template <named_message T>
message saga_command(const T& payload, std::string routing_key, std::string exchange = {}) {
    message m;
    m.type = std::string(message_type<T>::name);
    m.exchange = std::move(exchange);
    m.routing_key = std::move(routing_key);
    if (auto ec = encode_payload(m, payload))
        throw error(ec, "cannot encode the payload of a '" + m.type + "' command");
    return m;
}

} // namespace letterbox
