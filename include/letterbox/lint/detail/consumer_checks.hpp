// SPDX-License-Identifier: BSL-1.0
#pragma once

// The rules of check_topology about consumers, bindings and policies: private to lint/.

#include <letterbox/config.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/detail/dead_letter_checks.hpp>
#include <letterbox/lint/detail/lint_context.hpp>
#include <letterbox/lint/detail/policy_match.hpp>
#include <letterbox/lint/detail/queue_facts.hpp>
#include <letterbox/lint/rules.hpp>
#include <letterbox/lint/severity.hpp>
#include <letterbox/middleware/detail/duration_text.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/topic_match.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

inline void check_global_qos(lint_context& c) {
    for (const auto& s : c.consumers) {
        const auto i = c.routes.queue_index(s.queue);
        if (!s.global_qos || !i || c.facts[*i].kind != queue_kind::quorum)
            continue;
        c.report(codes::qq_global_qos, severity::error,
                 {consumer_object(s.queue), c.queue_object(*i)},
                 "The consumer of quorum queue " + single_quoted(s.queue) +
                     " sets a global qos on its channel, so its basic.consume fails with 540 "
                     "NOT_IMPLEMENTED and the whole connection is closed.",
                 "Use a per-consumer prefetch (basic.qos with global=false).");
    }
}

inline void check_inbox_retention(lint_context& c) {
    using middleware::detail::duration_text;
    for (const auto& s : c.consumers) {
        if (!s.inbox_retention || *s.inbox_retention >= s.redelivery_horizon)
            continue;
        c.report(codes::inbox_retention, severity::error, {consumer_object(s.queue)},
                 "The inbox of the consumer of " + single_quoted(s.queue) +
                     " keeps message ids for " + duration_text(*s.inbox_retention) +
                     ", shorter than the redelivery horizon " +
                     duration_text(s.redelivery_horizon) +
                     ", so a redelivery arriving later is handled again and its effects happen "
                     "twice.",
                 "Keep inbox records at least " + duration_text(s.redelivery_horizon) +
                     " or shorten the retry schedule.");
    }
}

/// Why retry queue `name` does not bring messages back to `target`, empty when it does.
inline std::string retry_problem(lint_context& c, const std::string& name,
                                 const std::string& target) {
    const auto i = c.routes.queue_index(name);
    if (!i)
        return "does not exist, so the messages sent to it are lost";
    const auto& f = c.facts[*i];
    if (!f.message_ttl)
        return "has no x-message-ttl, so a message waits in it forever";
    if (!f.dead_letter_exchange)
        return "has no dead-letter exchange, so an expired message is dropped";
    if (!c.routes.exchange_exists(*f.dead_letter_exchange))
        return "dead-letters to exchange " + single_quoted(*f.dead_letter_exchange) +
               ", which does not exist, so an expired message is dropped";
    const auto back = c.routes.queue_index(target);
    const auto& to = c.dead_letter_edges[*i];
    if (back && std::find(to.begin(), to.end(), *back) != to.end())
        return {};
    return "dead-letters expired messages to " +
           (to.empty() ? std::string("no queue") : name_list(c, {to.begin(), to.end()})) +
           ", not back to " + single_quoted(target);
}

inline void check_retry_route_back(lint_context& c) {
    for (const auto& s : c.consumers) {
        for (const auto& r : s.retry_queues) {
            const auto problem = retry_problem(c, r, s.queue);
            if (problem.empty())
                continue;
            c.report(codes::retry_no_route_back, severity::error,
                     {consumer_object(s.queue), object("queue", r)},
                     "Retry queue " + single_quoted(r) + " of the consumer of " +
                         single_quoted(s.queue) + " " + problem + ".",
                     "Declare " + single_quoted(r) +
                         " from topology::retry_topology: an x-message-ttl, x-dead-letter-exchange "
                         "'' and x-dead-letter-routing-key " +
                         single_quoted(s.queue) + ".");
        }
    }
}

inline void check_x_death_client(lint_context& c) {
    for (const auto& s : c.consumers) {
        if (!s.attempts_from_x_death)
            continue;
        c.report(codes::xdeath_client, severity::warning, {consumer_object(s.queue)},
                 "The consumer of " + single_quoted(s.queue) +
                     " counts attempts from x-death, but this RabbitMQ ignores an x-death a "
                     "client publishes, so a message replayed from a dead-letter queue or moved "
                     "by a shovel starts again from attempt one.",
                 "Count attempts in a header of your own (letterbox's attempt header) rather "
                 "than x-death.");
    }
}

inline void check_topic_hash_words(lint_context& c) {
    if (!c.applies(codes::topic_hash_words))
        return;
    const auto max = *c.profile.max_topic_hash_words;
    for (const auto& b : c.t.bindings) {
        if (c.routes.type_of(b.source) != topology::exchange_type::topic)
            continue;
        const auto words = topology::topic_hash_words(b.routing_key);
        if (words <= max)
            continue;
        c.report(codes::topic_hash_words, severity::error,
                 {binding_object(b.source, b.destination)},
                 "The binding of " + single_quoted(b.destination) + " to topic exchange " +
                     single_quoted(b.source) + " has key " + single_quoted(b.routing_key) +
                     " with " + std::to_string(words) + " '#' words, more than the " +
                     std::to_string(max) + " RabbitMQ " + std::string(c.profile.name) +
                     " accepts, so it is refused "
                     "with 406.",
                 "Rewrite the binding key with at most " + std::to_string(max) + " '#' words.");
    }
}

inline void check_policy_ignored(lint_context& c) {
    // One finding per policy and queue type, its queues in their order.
    struct group {
        const policy* p;
        queue_kind kind;
        std::vector<std::size_t> queues;
    };
    std::vector<group> groups;
    for (std::size_t i = 0; i < c.facts.size(); ++i) {
        for (const policy* p : c.facts[i].policies.ignored) {
            const auto kind = c.facts[i].kind;
            auto it = std::find_if(groups.begin(), groups.end(),
                                   [&](const group& g) { return g.p == p && g.kind == kind; });
            if (it == groups.end())
                it = groups.insert(groups.end(), group{p, kind, {}});
            it->queues.push_back(i);
        }
    }
    for (const auto& g : groups) {
        std::vector<std::string> objects{object("policy", g.p->name)};
        for (const auto i : g.queues)
            objects.push_back(c.queue_object(i));
        const bool quorum = g.kind == queue_kind::quorum;
        c.report(codes::policy_ignored, severity::warning, std::move(objects),
                 "Policy " + single_quoted(g.p->name) + " matches " + name_list(c, g.queues) +
                     " but holds key " + single_quoted(unsupported_key(*g.p, g.kind)) + ", which " +
                     (quorum ? "quorum" : "classic") +
                     " queues do not support, so none of its keys apply to them.",
                 "Split policy " + single_quoted(g.p->name) +
                     " into one per queue type (apply-to classic_queues or quorum_queues) "
                     "holding only the keys that type supports.");
    }
}

inline void check_policy_pattern(lint_context& c) {
    for (const policy* p : c.policies.invalid()) {
        const bool long_pattern = p->pattern.size() > max_policy_pattern;
        c.report(codes::policy_pattern, severity::warning, {object("policy", p->name)},
                 "Policy " + single_quoted(p->name) +
                     (long_pattern
                          ? " has a pattern longer than " + std::to_string(max_policy_pattern) +
                                " characters, which the lint does not check"
                          : " has pattern " + single_quoted(p->pattern) +
                                ", which is not a valid regular expression") +
                     ", so the lint treats it as applying to no queue.",
                 "Fix the pattern of policy " + single_quoted(p->name) + ".");
    }
}

} // namespace letterbox::lint::detail
