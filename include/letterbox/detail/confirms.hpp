// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <cstdint>
#include <iterator>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Takes out of `unconfirmed` (a map keyed by publish sequence number) the publishes that one
/// publisher confirm settles: `seq` alone, or, when `multiple`, every one up to and including
/// it (AMQP 0-9-1 `basic.ack` / `basic.nack` in confirm mode). In sequence order; empty when a
/// single confirm names no unconfirmed publish.
template <class Map>
std::vector<typename Map::mapped_type> take_confirmed(Map& unconfirmed, std::uint64_t seq,
                                                      bool multiple) {
    auto first = multiple ? unconfirmed.begin() : unconfirmed.find(seq);
    if (first == unconfirmed.end())
        return {};
    const auto last = multiple ? unconfirmed.upper_bound(seq) : std::next(first);
    std::vector<typename Map::mapped_type> taken;
    for (auto it = first; it != last; ++it)
        taken.push_back(std::move(it->second));
    unconfirmed.erase(first, last);
    return taken;
}

/// What a confirmed publish reports: nacked by the broker, returned as unroutable (a mandatory
/// publish the broker returned before it confirmed it), or stored.
inline std::error_code confirm_outcome(bool ack, bool returned) {
    if (!ack)
        return make_error_code(errc::publish_nacked);
    if (returned)
        return make_error_code(errc::no_route);
    return {};
}

} // namespace letterbox::detail
