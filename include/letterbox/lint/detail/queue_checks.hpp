// SPDX-License-Identifier: BSL-1.0
#pragma once

// The rules of check_topology about queue types, delivery limits and requeueing: private to
// lint/.

#include <letterbox/config.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/detail/dead_letter_checks.hpp>
#include <letterbox/lint/detail/lint_context.hpp>
#include <letterbox/lint/detail/queue_facts.hpp>
#include <letterbox/lint/rules.hpp>
#include <letterbox/lint/severity.hpp>
#include <letterbox/transport/in_memory/detail/declare_rules.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

inline void check_requeue_unbounded(lint_context& c) {
    for (const auto& s : c.consumers) {
        if (s.failures != failure_handling::requeue || s.attempts_limited)
            continue;
        const auto i = c.routes.queue_index(s.queue);
        const queue_facts* f = i ? &c.facts[*i] : nullptr;
        std::optional<std::int64_t> limit;
        const bool quorum = f && f->kind == queue_kind::quorum;
        // letterbox's consumers requeue with basic.nack, which 4.3 no longer counts toward the
        // delivery limit (only basic.reject and lost channels do).
        const bool nack_counts = c.profile.nack_increments_delivery_count;
        if (quorum && nack_counts) {
            limit = f->delivery_limit ? f->delivery_limit : c.profile.quorum_default_delivery_limit;
            if (limit && *limit < 0 && c.profile.quorum_negative_delivery_limit_is_unlimited)
                limit.reset();
        }
        std::string why = "The consumer of " + single_quoted(s.queue) +
                          " requeues what fails without a limit on attempts, so a poison "
                          "message ";
        if (limit)
            why += "is redelivered " + std::to_string(*limit) +
                   " times, as fast as it fails, before the quorum queue's delivery limit "
                   "ends it.";
        else
            why += !quorum ? "is redelivered forever (a classic queue has no delivery limit)."
                   : nack_counts
                       ? "is redelivered forever (the quorum queue has no delivery limit)."
                       : "is redelivered forever (on this version a requeue by basic.nack, "
                         "which letterbox's consumers use, does not count toward the quorum "
                         "queue's delivery limit).";
        std::vector<std::string> objects{consumer_object(s.queue)};
        if (i)
            objects.push_back(c.queue_object(*i));
        c.report(codes::requeue_unbounded, limit ? severity::warning : severity::error,
                 std::move(objects), why,
                 "Limit the attempts (a retry policy's max_attempts) and dead-letter what is "
                 "left, or declare the queue as a quorum queue with a delivery limit and a "
                 "dead-letter exchange.");
    }
}

inline void check_delivery_limit_default(lint_context& c) {
    if (!c.applies(codes::qq_delivery_limit_default))
        return;
    const auto limit = std::to_string(*c.profile.quorum_default_delivery_limit);
    for (std::size_t i = 0; i < c.facts.size(); ++i) {
        const auto& f = c.facts[i];
        // A delay queue (a TTL and a dead-letter exchange) is not consumed: nothing returns.
        if (f.kind != queue_kind::quorum || f.delivery_limit ||
            (f.message_ttl && f.dead_letter_exchange))
            continue;
        const auto& name = c.queue(i).name;
        // A dead-letter queue is browsed by scans that requeue with basic.nack: each counts
        // as a return where nacks count (up to 4.2), so its dead letters go after 20 scans.
        const bool dead_letter_queue = c.dead_letter_target[i] && !f.dead_letter_exchange &&
                                       !f.message_ttl && c.profile.nack_increments_delivery_count;
        std::string why = "Quorum queue " + single_quoted(name) +
                          " has no delivery limit, so from "
                          "RabbitMQ 4.0 it gets the default of " +
                          limit + ": ";
        std::string fix;
        if (dead_letter_queue) {
            why += "as a dead-letter queue without a dead-letter exchange it drops a dead "
                   "letter that was requeued " +
                   limit +
                   " times (a scan of the queue that "
                   "requeues).";
            fix = "Apply a policy with delivery-limit -1 to the dead-letter queues (4.0+), or "
                  "give them a dead-letter exchange.";
        } else if (!f.dead_letter_exchange) {
            why += "a message returned " + limit +
                   " times is dropped, as the queue has no "
                   "dead-letter exchange.";
            fix = "Give the queue a dead-letter exchange and set x-delivery-limit (or a "
                  "delivery-limit policy) to the number of returns it should allow.";
        } else {
            why += "a message returned " + limit + " times is dead-lettered.";
            fix = "Set x-delivery-limit (or a delivery-limit policy) to the number of returns "
                  "the consumer should be allowed.";
        }
        // A work queue loses a message only after 20 returns (crashes, lost channels): a
        // warning. A dead-letter queue loses its dead letters to 20 scans: an error.
        c.report(codes::qq_delivery_limit_default,
                 dead_letter_queue ? severity::error : severity::warning, {c.queue_object(i)}, why,
                 fix);
    }
}

inline void check_delivery_limit_negative(lint_context& c) {
    for (std::size_t i = 0; i < c.facts.size(); ++i) {
        const auto& f = c.facts[i];
        if (f.kind != queue_kind::quorum || !f.delivery_limit || *f.delivery_limit >= 0)
            continue;
        c.report(codes::qq_delivery_limit_negative, severity::error, {c.queue_object(i)},
                 "Quorum queue " + single_quoted(c.queue(i).name) + " has delivery limit " +
                     std::to_string(*f.delivery_limit) +
                     ", which before RabbitMQ 4.0 dead-letters (or drops) every message at its "
                     "first return instead of meaning unlimited.",
                 "Leave x-delivery-limit unset (unlimited before 4.0), or give it a positive "
                 "value.");
    }
}

inline void check_queue_arguments(lint_context& c) {
    namespace rules = in_memory::detail;
    auto listed = [](const auto& list, std::string_view name) {
        for (auto r : list)
            if (r == name)
                return true;
        return false;
    };
    for (std::size_t i = 0; i < c.facts.size(); ++i) {
        const auto& q = c.queue(i);
        const auto kind = c.facts[i].kind;
        if (kind == queue_kind::stream)
            continue;
        const bool quorum = kind == queue_kind::quorum;
        std::vector<std::string> refused;
        for (const auto& [name, value] : q.arguments)
            if (quorum ? listed(rules::quorum_refused_arguments, name)
                       : listed(rules::classic_refused_arguments, name))
                refused.push_back(name);
        if (quorum) {
            if (!q.durable)
                refused.emplace_back("non-durable");
            if (q.exclusive)
                refused.emplace_back("exclusive");
            if (q.auto_delete)
                refused.emplace_back("auto-delete");
        }
        if (refused.empty())
            continue;
        std::string list;
        for (const auto& r : refused)
            list += (list.empty() ? "" : ", ") + r;
        c.report(codes::qq_argument, severity::error, {c.queue_object(i)},
                 std::string(quorum ? "Quorum" : "Classic") + " queue " + single_quoted(q.name) +
                     " is declared with " + list +
                     ", which RabbitMQ refuses with 406 PRECONDITION_FAILED, so the queue "
                     "cannot be declared.",
                 quorum ? "Remove " + list +
                              " (a quorum queue must be durable, "
                              "non-exclusive and not auto-delete), or declare "
                              "a classic queue."
                        : "Remove " + list + ", or declare the queue as a quorum queue.");
    }
}

inline void check_overflow_dlx(lint_context& c) {
    for (std::size_t i = 0; i < c.facts.size(); ++i) {
        const auto& f = c.facts[i];
        if (f.kind != queue_kind::quorum || f.overflow != "reject-publish-dlx")
            continue;
        c.report(codes::qq_overflow_dlx, severity::warning, {c.queue_object(i)},
                 "Quorum queue " + single_quoted(c.queue(i).name) +
                     " has x-overflow reject-publish-dlx, which RabbitMQ accepts and runs as "
                     "drop-head: when full it confirms new messages and drops or dead-letters "
                     "the oldest.",
                 "Use x-overflow reject-publish to refuse new messages, or drop-head if "
                 "losing the oldest is intended.");
    }
}

inline void check_at_least_once(lint_context& c) {
    for (std::size_t i = 0; i < c.facts.size(); ++i) {
        const auto& f = c.facts[i];
        if (f.kind != queue_kind::quorum || f.dead_letter_strategy != "at-least-once")
            continue;
        const bool no_dlx = !f.dead_letter_exchange;
        const bool no_reject = f.overflow != "reject-publish";
        if (!no_dlx && !no_reject)
            continue;
        std::string why = "Quorum queue " + single_quoted(c.queue(i).name) +
                          " asks for at-least-once dead-lettering ";
        why += no_dlx ? "without a dead-letter exchange, so RabbitMQ dead-letters nothing"
                      : "without x-overflow reject-publish, so RabbitMQ falls back to "
                        "at-most-once";
        why += " and only logs a warning.";
        c.report(codes::at_least_once_fallback, severity::error, {c.queue_object(i)}, why,
                 no_dlx ? "Give the queue a dead-letter exchange (and x-overflow "
                          "reject-publish)."
                        : "Add x-overflow reject-publish to the queue.");
    }
}

} // namespace letterbox::lint::detail
