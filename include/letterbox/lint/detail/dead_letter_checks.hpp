// SPDX-License-Identifier: BSL-1.0
#pragma once

// The dead-letter rules of check_topology (LB-DLX-*): private to lint/.

#include <letterbox/config.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/detail/lint_context.hpp>
#include <letterbox/lint/detail/queue_facts.hpp>
#include <letterbox/lint/detail/strongly_connected.hpp>
#include <letterbox/lint/rules.hpp>
#include <letterbox/lint/severity.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

inline std::string single_quoted(std::string_view name) {
    return "'" + std::string(name) + "'";
}

/// The queue, its dead-letter exchange, and the policy that set it, if one did.
inline std::vector<std::string> dead_letter_objects(const lint_context& c, std::size_t i) {
    const auto& f = c.facts[i];
    std::vector<std::string> out{c.queue_object(i), object("exchange", *f.dead_letter_exchange)};
    if (f.dead_letter_policy)
        out.push_back(object("policy", f.dead_letter_policy->name));
    return out;
}

inline void check_dlx_missing(lint_context& c) {
    for (std::size_t i = 0; i < c.facts.size(); ++i) {
        const auto& f = c.facts[i];
        if (f.kind == queue_kind::stream || !f.dead_letter_exchange ||
            c.routes.exchange_exists(*f.dead_letter_exchange))
            continue;
        c.report(codes::dlx_missing, severity::error, dead_letter_objects(c, i),
                 "Queue " + single_quoted(c.queue(i).name) + " dead-letters to exchange " +
                     single_quoted(*f.dead_letter_exchange) +
                     ", which does not exist, so every message it rejects, expires or drops "
                     "for length is lost without an error.",
                 "Declare exchange " + single_quoted(*f.dead_letter_exchange) +
                     " with a dead-letter queue bound to it, or point the queue at an "
                     "exchange that exists.");
    }
}

inline void check_dlx_unroutable(lint_context& c) {
    for (std::size_t i = 0; i < c.facts.size(); ++i) {
        const auto& f = c.facts[i];
        if (f.kind == queue_kind::stream || !f.dead_letter_exchange ||
            !c.routes.exchange_exists(*f.dead_letter_exchange) || !c.dead_letter_edges[i].empty())
            continue;
        const auto& x = *f.dead_letter_exchange;
        std::string why = "Queue " + single_quoted(c.queue(i).name) + " dead-letters to ";
        std::string fix;
        if (x.empty()) {
            why += "the default exchange with routing key " +
                   single_quoted(*f.dead_letter_routing_key) +
                   ", but no queue has that name, so its dead letters are dropped.";
            fix = "Declare queue " + single_quoted(*f.dead_letter_routing_key) +
                  " or set x-dead-letter-routing-key to the dead-letter queue's name.";
        } else if (f.dead_letter_routing_key) {
            why += "exchange " + single_quoted(x) + " with routing key " +
                   single_quoted(*f.dead_letter_routing_key) +
                   ", which no binding routes to a queue, so its dead letters are dropped.";
            fix = "Bind a dead-letter queue to exchange " + single_quoted(x) + " with key " +
                  single_quoted(*f.dead_letter_routing_key) + ".";
        } else {
            why += "exchange " + single_quoted(x) +
                   ", which has no binding to any queue, so its dead letters are dropped.";
            fix = "Bind a dead-letter queue to exchange " + single_quoted(x) + ".";
        }
        c.report(codes::dlx_unroutable, severity::error, dead_letter_objects(c, i), why, fix);
    }
}

inline void check_dlx_none(lint_context& c) {
    for (std::size_t i = 0; i < c.facts.size(); ++i) {
        const auto& f = c.facts[i];
        if (f.kind == queue_kind::stream || f.dead_letter_exchange)
            continue;
        const auto& name = c.queue(i).name;
        bool rejected = false;
        for (const auto& s : c.consumers)
            rejected = rejected || (s.queue == name && s.failures == failure_handling::reject);
        const bool overflows =
            (f.max_length || f.max_length_bytes) && f.overflow != "reject-publish";
        const bool limited =
            f.kind == queue_kind::quorum && f.delivery_limit && *f.delivery_limit >= 0;
        const std::string fix = "Give queue " + single_quoted(name) +
                                " an x-dead-letter-exchange (or a dead-letter-exchange policy) "
                                "that leads to a dead-letter queue.";
        if (rejected) {
            c.report(codes::dlx_none, severity::warning, {c.queue_object(i), consumer_object(name)},
                     "Queue " + single_quoted(name) +
                         " has no dead-letter exchange and its consumer rejects what fails, so "
                         "every failed message is dropped.",
                     fix);
        } else if (f.message_ttl || overflows || limited) {
            std::string what = f.message_ttl ? "expire" : overflows ? "overflow" : "";
            if (limited)
                what += std::string(what.empty() ? "" : " or ") + "pass the delivery limit";
            c.report(codes::dlx_none, severity::info, {c.queue_object(i)},
                     "Queue " + single_quoted(name) +
                         " has no dead-letter exchange, so messages that " + what + " are dropped.",
                     fix);
        }
    }
}

inline std::vector<std::string> queue_objects(const lint_context& c,
                                              const std::vector<std::size_t>& queues) {
    std::vector<std::string> out;
    for (const auto i : queues)
        out.push_back(c.queue_object(i));
    return out;
}

inline std::string name_list(const lint_context& c, const std::vector<std::size_t>& queues) {
    std::string out;
    for (std::size_t k = 0; k < queues.size(); ++k) {
        if (k)
            out += k + 1 == queues.size() ? " and " : ", ";
        out += single_quoted(c.queue(queues[k]).name);
    }
    return out;
}

/// LB-DLX-CYCLE: the cycles of the dead-letter graph restricted to the queues that dead-letter
/// by expiry only.
inline void check_dlx_cycle(lint_context& c) {
    const std::size_t n = c.facts.size();
    std::vector<std::vector<std::size_t>> kept(n);
    std::vector<std::span<const std::size_t>> edges(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (!c.expires_only(i))
            continue;
        for (const auto j : c.dead_letter_edges[i])
            if (c.expires_only(j))
                kept[i].push_back(j);
        edges[i] = kept[i];
    }
    // With the application's consumers given, a queue none of them consumes is not consumed:
    // a message in the cycle expires, and is lost. Without them (a definitions export), the
    // message is lost only if it expires in each queue, which the lint cannot know.
    const bool consumers_known = !c.consumers.empty();
    for (const auto& cycle : cyclic_components(edges)) {
        const bool one = cycle.size() == 1;
        c.report(codes::dlx_cycle, consumers_known ? severity::error : severity::warning,
                 queue_objects(c, cycle),
                 (one ? "Queue " + name_list(c, cycle) +
                            " dead-letters expired messages back "
                            "into itself"
                      : "Queues " + name_list(c, cycle) +
                            " dead-letter into each other by expiry only") +
                     ", with no rejection in the cycle, so RabbitMQ drops a message the second "
                     "time it reaches a queue of the cycle" +
                     (consumers_known ? std::string(".")
                                      : std::string(" (a message that expires in each of them; "
                                                    "no consumer settings were given).")),
                 "End the chain in a dead-letter queue without a message TTL, or have a "
                 "consumer reject in one of its queues.");
    }
}

/// LB-DLX-RING: a cycle with a rejection in which two queues dead-letter by expiry in a row.
inline void check_dlx_ring(lint_context& c) {
    if (!c.applies(codes::dlx_ring))
        return;
    std::vector<bool> in(c.facts.size(), false);
    for (const auto& cycle : cyclic_components(c.dead_letter_edges)) {
        for (const auto i : cycle)
            in[i] = true;
        bool rejects = false, two_expiries = false;
        for (const auto i : cycle) {
            rejects = rejects || !c.expires_only(i);
            if (!c.expires_only(i))
                continue;
            for (const auto j : c.dead_letter_edges[i])
                two_expiries = two_expiries || (in[j] && j != i && c.expires_only(j));
        }
        for (const auto i : cycle)
            in[i] = false;
        if (!rejects || !two_expiries)
            continue;
        c.report(codes::dlx_ring, severity::error, queue_objects(c, cycle),
                 "Queues " + name_list(c, cycle) +
                     " form a dead-letter ring with a rejection followed by two expiries in a "
                     "row; RabbitMQ 3.10-3.12 reorder x-death, take it for a cycle without a "
                     "rejection and drop the message silently on its second lap.",
                 "Put a single expiring queue between two rejections (as "
                 "topology::retry_topology does), or upgrade to RabbitMQ 3.13 or later.");
    }
}

} // namespace letterbox::lint::detail
