// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/headers.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware {

namespace detail {
inline std::uint32_t clamp_count(std::int64_t n) {
    if (n <= 0)
        return 0;
    return static_cast<std::uint32_t>(
        std::min<std::int64_t>(n, std::numeric_limits<std::uint32_t>::max()));
}
} // namespace detail

/// How many failed attempts the message of `d` had before this delivery, read from the
/// message itself so that the count survives a consumer crash, a restart and scale-out
/// (DESIGN §3.4). Two kinds of count add up:
///
/// - the attempts made on earlier copies of the message, the larger of
///   - `headers::attempts`, letterbox's own counter, written by the redelivery and
///     dead-letter layers on every copy they publish, and
///   - the `x-death` count for reason `rejected` on `d.queue`, written by the broker when a
///     consumer of that queue rejected it onto a dead-letter exchange (broker-side retry
///     through a TTL queue, with no letterbox header);
/// - plus the returns of this very copy: `x-delivery-count`, which a quorum queue sets from
///   the second delivery of a message on (a consumer crashed or lost its connection, or
///   the message was requeued). Each copy starts again without it, so it never counts an
///   attempt that the first kind counts already (the layers strip it from their copies).
///
/// Malformed or negative values count as 0: a header is never trusted to be well formed.
/// A crash of a consumer of a classic queue leaves no count anywhere (the broker only sets
/// the redelivered flag), so such a delivery is not counted; see docs/retry-and-dead-letter.md.
inline std::uint32_t attempts_before(const delivery& d) {
    const field_table& h = d.msg.headers;
    std::uint32_t earlier = 0;
    if (const auto* v = h.find(headers::attempts))
        if (auto i = v->as_integer())
            earlier = std::max(earlier, detail::clamp_count(*i));
    if (const auto* v = h.find(headers::x_death))
        if (const auto* deaths = v->get_if<field_array>())
            for (const auto& entry : *deaths) {
                const auto* t = entry.get_if<field_table>();
                if (!t || t->get<std::string>(headers::x_death_field::reason) != "rejected" ||
                    t->get<std::string>(headers::x_death_field::queue) != d.queue)
                    continue;
                if (const auto* c = t->find(headers::x_death_field::count))
                    if (auto i = c->as_integer())
                        earlier = std::max(earlier, detail::clamp_count(*i));
            }
    std::uint32_t returns = 0;
    if (const auto* v = h.find(headers::x_delivery_count))
        if (auto i = v->as_integer())
            returns = detail::clamp_count(*i);
    return detail::clamp_count(std::int64_t{earlier} + std::int64_t{returns});
}

} // namespace letterbox::middleware
