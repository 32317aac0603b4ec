// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/handler_failure.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {

/// The copy of `d.msg` that a layer republishes after a failure: same id, body and
/// properties, with the failure recorded in letterbox's headers. Where it was consumed is
/// recorded once, on the first copy, so that the original exchange, routing key and queue
/// survive any number of trips through retry queues.
inline message failed_copy(const delivery& d, const handler_failure& f, std::uint32_t attempts,
                           std::chrono::system_clock::time_point now) {
    message m = d.msg;
    auto& h = m.headers;
    const std::string stamp = letterbox::detail::format_rfc3339(now);
    h.set(headers::attempts, static_cast<std::int64_t>(attempts));
    if (!h.contains(headers::first_failure_time))
        h.set(headers::first_failure_time, stamp);
    h.set(headers::last_failure_time, stamp);
    if (!f.exception_type.empty())
        h.set(headers::exception_type, f.exception_type);
    else
        h.erase(headers::exception_type);
    h.set(headers::exception_message,
          f.exception_message.empty() ? f.error.message() : f.exception_message);
    if (!h.contains(headers::original_queue)) {
        h.set(headers::original_exchange, d.msg.exchange);
        h.set(headers::original_routing_key, d.msg.routing_key);
        h.set(headers::original_queue, d.queue);
    }
    // The broker dropped the expiration when the message was dead-lettered; a copy never
    // inherits one that a retry level set.
    m.properties.expiration.reset();
    // A quorum queue's counts of this delivery's returns are in `attempts` now. A copy that
    // kept them would carry them into its next queue, where a quorum queue leaves a
    // publisher's `x-delivery-count` on the first delivery (seen on 3.10.8), counted twice.
    h.erase(headers::x_delivery_count);
    h.erase(headers::x_acquired_count);
    return m;
}

} // namespace letterbox::middleware::detail
