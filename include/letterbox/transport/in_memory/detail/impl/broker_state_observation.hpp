// SPDX-License-Identifier: BSL-1.0
#pragma once

// What tests and the broker facade read: queue details, names, bindings and totals.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL std::optional<queue_info> broker_state::info(std::string_view name) const {
    auto it = queues_.find(name);
    if (it == queues_.end())
        return std::nullopt;
    const auto& q = *it->second;
    return queue_info{q.name,          q.args.type, q.durable,          q.exclusive,  q.auto_delete,
                      q.ready_count(), q.unacked,   q.consumers.size(), q.ready_bytes};
}

LETTERBOX_DECL std::vector<std::string> broker_state::queue_names() const {
    std::vector<std::string> out;
    for (const auto& [name, q] : queues_)
        out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
}

LETTERBOX_DECL std::vector<topology::binding>
broker_state::bindings_of(std::string_view exchange) const {
    auto it = exchanges_.find(exchange);
    return it == exchanges_.end() ? std::vector<topology::binding>{} : it->second.bindings;
}

LETTERBOX_DECL std::pair<std::size_t, std::size_t> broker_state::totals() const {
    std::size_t r = 0, u = 0;
    for (const auto& [name, q] : queues_) {
        r += q->ready_count();
        u += q->unacked;
    }
    return {r, u};
}

LETTERBOX_DECL std::size_t broker_state::open_channels() const noexcept {
    std::size_t n = 0;
    for (const auto& c : connections_)
        for (const auto& ch : c->channels)
            n += ch->open ? 1 : 0;
    return n;
}

} // namespace letterbox::in_memory::detail
