// SPDX-License-Identifier: BSL-1.0
#pragma once

// Where a topology's exchanges route a message: private to lint/. Bounded: each route visits
// every exchange and every binding at most once, and routes are memoized per exchange and key.

#include <letterbox/config.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/topic_match.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

/// The exchanges every RabbitMQ virtual host has, which a definitions export leaves out.
inline std::optional<topology::exchange_type> builtin_exchange(std::string_view name) noexcept {
    using topology::exchange_type;
    if (name.empty() || name == "amq.direct")
        return exchange_type::direct;
    if (name == "amq.fanout")
        return exchange_type::fanout;
    if (name == "amq.topic" || name == "amq.rabbitmq.trace")
        return exchange_type::topic;
    if (name == "amq.headers" || name == "amq.match")
        return exchange_type::headers;
    if (name.starts_with("amq."))
        return exchange_type::direct;
    return std::nullopt;
}

class routing_index {
public:
    explicit routing_index(const broker_topology& t)
        : t_(t) {
        for (std::size_t i = 0; i < t.queues.size(); ++i)
            queues_.emplace(t.queues[i].name, i); // the first of duplicates wins
        for (const auto& x : t.exchanges)
            exchanges_.emplace(x.name, &x);
        for (const auto& b : t.bindings)
            bindings_[b.source].push_back(&b);
    }

    std::optional<std::size_t> queue_index(std::string_view name) const {
        const auto it = queues_.find(name);
        if (it == queues_.end())
            return std::nullopt;
        return it->second;
    }

    bool exchange_exists(std::string_view name) const {
        return builtin_exchange(name) || exchanges_.find(name) != exchanges_.end();
    }

    std::optional<topology::exchange_type> type_of(std::string_view name) const {
        const auto it = exchanges_.find(name);
        if (it != exchanges_.end())
            return it->second->type;
        return builtin_exchange(name);
    }

    /// The queues (indices into `queues`, ascending) a message published to `exchange` with
    /// `key` reaches, following exchange-to-exchange bindings and alternate exchanges.
    /// `key` `std::nullopt`: any key (every binding counts). The default exchange routes a key
    /// to the queue of that name. Memoized: the reference stays valid while `*this` lives.
    const std::vector<std::size_t>& route(std::string_view exchange,
                                          const std::optional<std::string>& key) {
        std::string memo_key(exchange);
        memo_key.push_back('\0');
        if (key)
            memo_key.append("k").append(*key);
        if (const auto it = memo_.find(memo_key); it != memo_.end())
            return it->second;
        return memo_.emplace(std::move(memo_key), compute(exchange, key)).first->second;
    }

private:
    static bool binding_matches(topology::exchange_type type, const topology::binding& b,
                                const std::optional<std::string>& key) {
        using topology::exchange_type;
        if (!key)
            return true;
        switch (type) {
        case exchange_type::direct:
            return b.routing_key == *key;
        case exchange_type::topic:
            return topology::topic_matches(b.routing_key, *key);
        case exchange_type::fanout:
        case exchange_type::headers:         // the headers decide: assume some match
        case exchange_type::consistent_hash: // every bound queue gets a share
            return true;
        }
        return true;
    }

    std::optional<std::string_view> alternate_of(std::string_view exchange) const {
        const auto it = exchanges_.find(exchange);
        if (it == exchanges_.end())
            return std::nullopt;
        if (const auto* v = it->second->arguments.find("alternate-exchange"))
            if (const auto* s = v->get_if<std::string>())
                return std::string_view(*s);
        return std::nullopt;
    }

    std::vector<std::size_t> compute(std::string_view exchange,
                                     const std::optional<std::string>& key) const {
        std::vector<std::size_t> out;
        if (exchange.empty()) {
            if (key)
                if (const auto q = queue_index(*key))
                    out.push_back(*q);
            return out;
        }
        std::unordered_set<std::string_view> seen{exchange};
        std::vector<std::string_view> work{exchange};
        while (!work.empty()) {
            const std::string_view x = work.back();
            work.pop_back();
            const auto type = type_of(x);
            if (!type)
                continue; // a binding to an exchange that does not exist routes nothing
            bool routed = false;
            if (const auto it = bindings_.find(x); it != bindings_.end()) {
                for (const auto* b : it->second) {
                    if (!binding_matches(*type, *b, key))
                        continue;
                    if (b->kind == topology::destination_kind::queue) {
                        if (const auto q = queue_index(b->destination)) {
                            out.push_back(*q);
                            routed = true;
                        }
                    } else if (seen.insert(b->destination).second) {
                        work.push_back(b->destination);
                    }
                }
            }
            if (!routed)
                if (const auto ae = alternate_of(x); ae && seen.insert(*ae).second)
                    work.push_back(*ae);
        }
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    }

    const broker_topology& t_;
    std::unordered_map<std::string_view, std::size_t> queues_;
    std::unordered_map<std::string_view, const topology::exchange*> exchanges_;
    std::unordered_map<std::string_view, std::vector<const topology::binding*>> bindings_;
    std::unordered_map<std::string, std::vector<std::size_t>> memo_;
};

} // namespace letterbox::lint::detail
