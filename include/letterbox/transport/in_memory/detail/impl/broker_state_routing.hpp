// SPDX-License-Identifier: BSL-1.0
#pragma once

// Routing a message through exchanges and their bindings to queues.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL void broker_state::route_exchange(const exchange_state& x,
                                                 std::span<const std::string_view> keys,
                                                 const message& msg, std::vector<queue_state*>& out,
                                                 std::vector<const exchange_state*>& seen) {
    if (!seen.empty() && std::find(seen.begin(), seen.end(), &x) != seen.end())
        return;
    auto add_queue = [&](std::string_view name) {
        auto it = queues_.find(name);
        if (it == queues_.end() || it->second->deleted)
            return;
        auto* q = it->second.get();
        if (std::find(out.begin(), out.end(), q) == out.end())
            out.push_back(q);
    };
    if (x.decl.name.empty()) {
        for (auto k : keys)
            add_queue(k);
        return;
    }
    bool routed = false; // any binding matched, whether or not it led to a queue
    auto deliver_to = [&](topology::destination_kind kind, const std::string& destination) {
        routed = true;
        if (kind == topology::destination_kind::queue) {
            add_queue(destination);
        } else if (auto it = exchanges_.find(destination); it != exchanges_.end()) {
            seen.push_back(&x); // only exchange-to-exchange routing needs cycle protection
            route_exchange(it->second, keys, msg, out, seen);
        }
    };
    auto match_binding = [&](const topology::binding& b) {
        bool hit = false;
        switch (x.decl.type) {
        case topology::exchange_type::fanout:
            hit = true;
            break;
        case topology::exchange_type::direct:
            hit =
                std::find(keys.begin(), keys.end(), std::string_view(b.routing_key)) != keys.end();
            break;
        case topology::exchange_type::topic:
            hit = std::any_of(keys.begin(), keys.end(), [&](std::string_view k) {
                return topology::topic_matches(b.routing_key, k);
            });
            break;
        case topology::exchange_type::headers:
            hit = headers_match(b.arguments, msg);
            break;
        case topology::exchange_type::consistent_hash:
            break; // routed by its buckets instead, below
        }
        if (hit)
            deliver_to(b.kind, b.destination);
    };
    if (x.decl.type == topology::exchange_type::consistent_hash) {
        // Exactly one destination, chosen by the hash of the publish's routing key (the head of
        // RabbitMQ's routing keys: CC and BCC keys are not hashed), or of the header or property
        // the exchange's arguments name (§2.17).
        if (const auto* r = x.ring.pick(keys.empty() ? std::string_view{} : keys[0], msg))
            deliver_to(r->kind, r->destination);
    } else {
        for (const auto& b : x.bindings)
            match_binding(b);
    }
    // rabbit_exchange:route1 (process_alternate): an exchange whose bindings matched
    // nothing hands the message to its alternate exchange, if that exists. Each exchange is
    // walked at most once, so alternate exchanges that point at each other end.
    if (!routed && x.alternate)
        if (auto it = exchanges_.find(*x.alternate); it != exchanges_.end()) {
            seen.push_back(&x);
            route_exchange(it->second, keys, msg, out, seen);
        }
}

LETTERBOX_DECL void broker_state::route(const std::shared_ptr<const envelope>& env,
                                        std::vector<queue_state*>& out,
                                        const std::string* explicit_key, const exchange_state* x) {
    if (!x) {
        auto found = exchanges_.find(env->msg.exchange);
        if (found == exchanges_.end())
            return;
        x = &found->second;
    }
    const auto& exchange = *x;
    auto& seen = seen_scratch_;
    seen.clear();
    if (explicit_key) {
        std::string_view one[1] = {*explicit_key};
        route_exchange(exchange, one, env->msg, out, seen);
    } else if (env->cc.empty() && env->bcc.empty()) {
        std::string_view one[1] = {env->msg.routing_key};
        route_exchange(exchange, one, env->msg, out, seen);
    } else {
        std::vector<std::string_view> keys{env->msg.routing_key};
        keys.insert(keys.end(), env->cc.begin(), env->cc.end());
        keys.insert(keys.end(), env->bcc.begin(), env->bcc.end());
        route_exchange(exchange, keys, env->msg, out, seen);
    }
}

} // namespace letterbox::in_memory::detail
