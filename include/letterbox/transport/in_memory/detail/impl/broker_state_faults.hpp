// SPDX-License-Identifier: BSL-1.0
#pragma once

// Fault injection: severed connections, an unreachable broker and restarts.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL void broker_state::sever_all() {
    scope s(*this);
    auto conns = connections_;
    for (auto& c : conns)
        close_connection(*c, {make_error_code(errc::connection_forced),
                              "CONNECTION_FORCED - connection severed (fault injection)"});
}

LETTERBOX_DECL void broker_state::go_down() {
    scope s(*this);
    down_ = true;
    auto conns = connections_;
    for (auto& c : conns)
        close_connection(*c, {make_error_code(errc::connection_forced),
                              "CONNECTION_FORCED - broker unreachable (fault injection)"});
}

LETTERBOX_DECL std::vector<letterbox::detail::unique_function<void()>> broker_state::come_back() {
    down_ = false;
    return std::exchange(up_waiters_, {});
}

LETTERBOX_DECL void broker_state::when_up(letterbox::detail::unique_function<void()> f) {
    up_waiters_.push_back(std::move(f));
}

LETTERBOX_DECL void broker_state::restart() {
    scope s(*this);
    auto conns = connections_;
    for (auto& c : conns)
        close_connection(
            *c, {make_error_code(errc::connection_forced),
                 "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"});
    std::vector<std::string> lost;
    for (auto& [name, q] : queues_) {
        if (!q->durable) {
            lost.push_back(name);
            continue;
        }
        if (q->quorum())
            continue; // quorum queues keep every message
        for (auto* list : {&q->ready, &q->returns}) {
            auto keep = std::stable_partition(list->begin(), list->end(), [](const queued& m) {
                return m.env->msg.properties.persistent;
            });
            for (auto i = keep; i != list->end(); ++i) {
                q->ready_bytes -= i->bytes();
                ++counters_.dropped[static_cast<std::size_t>(drop_kind::broker_restart)];
            }
            list->erase(keep, list->end());
        }
        schedule(*q);
    }
    for (auto& name : lost)
        delete_queue(*queues_.at(name), drop_kind::broker_restart);
    std::vector<std::string> transient;
    for (auto& [name, x] : exchanges_)
        if (!x.builtin && !x.decl.durable)
            transient.push_back(name);
    for (auto& name : transient)
        remove_exchange(name);
    // The plugin keeps its buckets in memory only, and a restart makes them again from the
    // bindings in sorted order, not in the order they were made
    // (rabbit_exchange_type_consistent_hash:recover): keys can move to other queues.
    for (auto& [name, x] : exchanges_)
        if (x.decl.type == topology::exchange_type::consistent_hash)
            x.ring.rebuild(x.bindings);
}

} // namespace letterbox::in_memory::detail
