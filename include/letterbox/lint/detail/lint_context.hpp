// SPDX-License-Identifier: BSL-1.0
#pragma once

// What every rule of check_topology reads, computed once: each queue's effective arguments,
// the routes, the dead-letter graph; and where the findings go. Private to lint/.

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/detail/policy_match.hpp>
#include <letterbox/lint/detail/queue_facts.hpp>
#include <letterbox/lint/detail/routing.hpp>
#include <letterbox/lint/effective_arguments.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/rules.hpp>
#include <letterbox/lint/severity.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

/// One queue as the broker runs it: its arguments merged with the policies that apply.
struct queue_facts {
    queue_kind kind = queue_kind::classic;
    field_table arguments{};
    std::optional<std::string> dead_letter_exchange{};
    std::optional<std::string> dead_letter_routing_key{};
    std::optional<std::int64_t> message_ttl{};
    std::optional<std::int64_t> max_length{};
    std::optional<std::int64_t> max_length_bytes{};
    std::optional<std::int64_t> delivery_limit{};
    std::optional<std::string> overflow{};
    std::optional<std::string> dead_letter_strategy{};
    policy_set::resolution policies{};

    /// Whether its dead-letter exchange came from a policy rather than an argument.
    const policy* dead_letter_policy = nullptr;
};

class lint_context {
public:
    lint_context(const broker_topology& t, const in_memory::broker_profile& profile,
                 std::span<const consumer_settings> consumers)
        : t(t)
        , profile(profile)
        , consumers(consumers)
        , policies(t.policies)
        , routes(t) {
        namespace a = topology::args;
        facts.reserve(t.queues.size());
        expires_only_.reserve(t.queues.size());
        for (const auto& q : t.queues) {
            queue_facts f;
            f.kind = kind_of(q.arguments);
            f.policies = policies.resolve(q.name, f.kind);
            f.arguments =
                merge_policy(q.arguments, combined_policy(f.policies.user, f.policies.op), f.kind);
            f.dead_letter_exchange = text_of(f.arguments, a::dead_letter_exchange);
            f.dead_letter_routing_key = text_of(f.arguments, a::dead_letter_routing_key);
            f.message_ttl = integer_of(f.arguments, a::message_ttl);
            f.max_length = integer_of(f.arguments, a::max_length);
            f.max_length_bytes = integer_of(f.arguments, a::max_length_bytes);
            f.delivery_limit = integer_of(f.arguments, a::delivery_limit);
            f.overflow = text_of(f.arguments, a::overflow);
            f.dead_letter_strategy = text_of(f.arguments, a::dead_letter_strategy);
            if (f.dead_letter_exchange && !q.arguments.contains(a::dead_letter_exchange))
                f.dead_letter_policy = f.policies.user;
            expires_only_.push_back(f.message_ttl && !rejected_by_consumer(q.name));
            facts.push_back(std::move(f));
        }
        build_dead_letter_graph();
    }

    lint_context(const lint_context&) = delete;
    lint_context& operator=(const lint_context&) = delete;

    const broker_topology& t;
    const in_memory::broker_profile& profile;
    std::span<const consumer_settings> consumers;
    policy_set policies;
    routing_index routes;
    std::vector<queue_facts> facts;
    /// Where each queue's dead letters go (queue indices); empty without a dead-letter
    /// exchange, or with one that does not exist. The default exchange without a dead-letter
    /// routing key sends a message back under its own routing key: taken as the queue's name.
    std::vector<std::span<const std::size_t>> dead_letter_edges;
    /// Whether another queue dead-letters into it.
    std::vector<bool> dead_letter_target;
    std::vector<finding> findings;

    const topology::queue& queue(std::size_t i) const { return t.queues[i]; }
    std::string queue_object(std::size_t i) const { return object("queue", t.queues[i].name); }

    /// Whether a consumer of `queue` rejects what fails, so the queue dead-letters by
    /// rejection.
    bool rejected_by_consumer(std::string_view queue) const {
        for (const auto& c : consumers)
            if (c.queue == queue &&
                (c.failures == failure_handling::reject || c.attempts_from_x_death))
                return true;
        return false;
    }

    /// Whether queue `i` dead-letters only by expiry: it has a message TTL and no consumer
    /// rejects in it. Any other queue counts as dead-lettering by rejection.
    bool expires_only(std::size_t i) const { return expires_only_[i]; }

    bool applies(std::string_view code) const {
        const rule* r = find_rule(code);
        return r && r->applies(profile);
    }

    /// Adds a finding of rule `code` when the rule applies to the profile.
    void report(std::string_view code, severity level, std::vector<std::string> objects,
                std::string why, std::string fix) {
        const rule* r = find_rule(code);
        if (!r || !r->applies(profile))
            return;
        findings.push_back({.level = level,
                            .code = std::string(code),
                            .objects = std::move(objects),
                            .versions = versions_of(*r),
                            .why = std::move(why),
                            .fix = std::move(fix)});
    }

private:
    void build_dead_letter_graph() {
        const std::size_t n = t.queues.size();
        self_.resize(n);
        dead_letter_edges.assign(n, {});
        dead_letter_target.assign(n, false);
        for (std::size_t i = 0; i < n; ++i) {
            self_[i] = i;
            const auto& f = facts[i];
            if (!f.dead_letter_exchange || !routes.exchange_exists(*f.dead_letter_exchange))
                continue;
            if (f.dead_letter_exchange->empty() && !f.dead_letter_routing_key)
                dead_letter_edges[i] = std::span<const std::size_t>(&self_[i], 1);
            else
                dead_letter_edges[i] =
                    routes.route(*f.dead_letter_exchange, f.dead_letter_routing_key);
        }
        for (std::size_t i = 0; i < n; ++i)
            for (const std::size_t j : dead_letter_edges[i])
                if (j != i)
                    dead_letter_target[j] = true;
    }

    std::vector<std::size_t> self_;
    std::vector<bool> expires_only_;
};

} // namespace letterbox::lint::detail
