// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq::detail {

/// The copy of a dead-lettered message that a replay publishes (see docs/dead-letter-operations.md,
/// "What replay changes"): the same id, type, body and properties, addressed to the original
/// exchange and routing key, with the failure bookkeeping reset:
/// - `x-letterbox-attempts` removed, so the retry policy starts again;
/// - `x-death` moved to `x-letterbox-death-history` (its entries first, then any history of
///   earlier replays), and the `x-first-death-*` and `x-last-death-*` headers removed: a broker
///   counts from `x-death` (RabbitMQ 4.x even ignores a client's), so the replayed message must
///   not carry it;
/// - the fault headers (death reason, exception type and message, failure times, dead-lettered
///   time) removed, so the next failure records its own;
/// - `x-letterbox-replay-count` incremented and `x-letterbox-replayed-time` set to `now`.
///
/// Everything else, the `x-letterbox-original-*` headers and the consumer id included, is kept.
inline message make_replay_message(const dead_letter_entry& e,
                                   std::chrono::system_clock::time_point now) {
    namespace h = letterbox::headers;
    message m = e.msg;
    m.exchange = e.original_exchange;
    m.routing_key = e.original_routing_key;
    auto& hs = m.headers;

    hs.erase(h::attempts);
    if (const auto* death = hs.find(h::x_death)) {
        field_array history;
        if (const auto* entries = death->get_if<field_array>())
            history = *entries;
        else
            history.push_back(*death);
        if (const auto* earlier = hs.find(h::death_history)) {
            if (const auto* old = earlier->get_if<field_array>())
                history.insert(history.end(), old->begin(), old->end());
            else
                history.push_back(*earlier);
        }
        hs.set(h::death_history, std::move(history));
        hs.erase(h::x_death);
    }
    for (const auto name :
         {h::x_first_death_reason, h::x_first_death_queue, h::x_first_death_exchange,
          h::x_last_death_reason, h::x_last_death_queue, h::x_last_death_exchange, h::death_reason,
          h::exception_type, h::exception_message, h::first_failure_time, h::last_failure_time,
          h::dead_lettered_time})
        hs.erase(name);
    hs.set(h::replay_count, static_cast<std::int64_t>(e.replay_count) + 1);
    hs.set(h::replayed_time, letterbox::detail::format_rfc3339(now));
    return m;
}

} // namespace letterbox::dlq::detail
