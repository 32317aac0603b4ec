// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/lint/rule.hpp>
#include <letterbox/lint/severity.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>

#include <array>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint {

/// The stable codes of `lint::rules`.
namespace codes {
inline constexpr std::string_view dlx_missing = "LB-DLX-MISSING";
inline constexpr std::string_view dlx_unroutable = "LB-DLX-UNROUTABLE";
inline constexpr std::string_view dlx_none = "LB-DLX-NONE";
inline constexpr std::string_view dlx_cycle = "LB-DLX-CYCLE";
inline constexpr std::string_view dlx_ring = "LB-DLX-RING";
inline constexpr std::string_view requeue_unbounded = "LB-REQUEUE-UNBOUNDED";
inline constexpr std::string_view qq_delivery_limit_default = "LB-QQ-DELIVERY-LIMIT-DEFAULT";
inline constexpr std::string_view qq_delivery_limit_negative = "LB-QQ-DELIVERY-LIMIT-NEGATIVE";
inline constexpr std::string_view qq_argument = "LB-QQ-ARGUMENT";
inline constexpr std::string_view qq_overflow_dlx = "LB-QQ-OVERFLOW-DLX";
inline constexpr std::string_view at_least_once_fallback = "LB-AT-LEAST-ONCE-FALLBACK";
inline constexpr std::string_view qq_global_qos = "LB-QQ-GLOBAL-QOS";
inline constexpr std::string_view inbox_retention = "LB-INBOX-RETENTION";
inline constexpr std::string_view retry_no_route_back = "LB-RETRY-NO-ROUTE-BACK";
inline constexpr std::string_view xdeath_client = "LB-XDEATH-CLIENT";
inline constexpr std::string_view topic_hash_words = "LB-TOPIC-HASH-WORDS";
inline constexpr std::string_view policy_ignored = "LB-POLICY-IGNORED";
inline constexpr std::string_view policy_pattern = "LB-POLICY-PATTERN";
} // namespace codes

namespace detail {
// Which broker profiles a rule applies to (`rule::applies`).
inline bool every_version(const in_memory::broker_profile&) noexcept {
    return true;
}
inline bool reverses_x_death(const in_memory::broker_profile& p) noexcept {
    return p.reverse_x_death_on_event;
}
inline bool has_default_delivery_limit(const in_memory::broker_profile& p) noexcept {
    return p.quorum_default_delivery_limit.has_value();
}
inline bool negative_delivery_limit_is_not_unlimited(const in_memory::broker_profile& p) noexcept {
    return !p.quorum_negative_delivery_limit_is_unlimited;
}
inline bool permits_global_qos(const in_memory::broker_profile& p) noexcept {
    return p.global_qos_permitted;
}
inline bool ignores_client_x_death(const in_memory::broker_profile& p) noexcept {
    return !p.client_x_death_is_history;
}
inline bool limits_topic_hash_words(const in_memory::broker_profile& p) noexcept {
    return p.max_topic_hash_words.has_value();
}
} // namespace detail

/// Every rule of `lint::check_topology`, in the order its findings are produced (before they
/// are sorted by severity). docs/topology-lint.md describes each with its evidence.
inline constexpr std::array<rule, 18> rules{{
    {codes::dlx_missing, severity::error, "dead-letter exchange missing",
     "A queue's dead-letter exchange does not exist, so what the queue dead-letters (rejected, "
     "expired, overflowed or past its delivery limit) is dropped without an error.",
     "Declare the exchange, with a binding to a dead-letter queue, or point the queue's "
     "x-dead-letter-exchange at one that exists.",
     &detail::every_version,
     "tests/unit/lint/ground_truth.cpp: \"LB-DLX-MISSING: a rejected message whose dead-letter "
     "exchange does not exist vanishes\"; tests/unit/transport/in_memory/dead_lettering.cpp: "
     "\"DLX-14 a missing dead-letter exchange drops the message ...\"; RabbitMQ docs, dlx: "
     "dead-lettered messages to a missing exchange are silently dropped."},
    {codes::dlx_unroutable, severity::error, "dead letters routed nowhere",
     "The dead-letter exchange exists but routes the dead letter to no queue (no binding matches "
     "its dead-letter routing key, or the exchange has no bindings), so it is dropped.",
     "Bind a dead-letter queue to the exchange with the queue's x-dead-letter-routing-key, or "
     "change the key to one that is bound.",
     &detail::every_version,
     "tests/unit/lint/ground_truth.cpp: \"LB-DLX-UNROUTABLE: a dead letter that its exchange "
     "routes nowhere vanishes\"."},
    {codes::dlx_none, severity::warning, "no dead-letter exchange",
     "A queue without a dead-letter exchange drops what it would dead-letter: messages a consumer "
     "rejects without requeue (a warning), or messages that expire or overflow (a note).",
     "Give the queue an x-dead-letter-exchange (or a dead-letter-exchange policy) leading to a "
     "dead-letter queue, or let letterbox publish failures to a dead-letter queue itself.",
     &detail::every_version,
     "tests/unit/lint/ground_truth.cpp: \"LB-DLX-NONE: a rejected message of a queue without a "
     "dead-letter exchange vanishes\"."},
    {codes::dlx_cycle, severity::error, "dead-letter cycle without a rejection",
     "Queues dead-letter into each other by expiry (or overflow) only, with no rejection in the "
     "cycle, so RabbitMQ drops the message on its second visit to a queue of the cycle (a "
     "warning when no consumer settings say what consumes the queues).",
     "Break the cycle: end it in a dead-letter queue, or let a consumer reject in one of its "
     "queues.",
     &detail::every_version,
     "tests/unit/lint/ground_truth.cpp: \"LB-DLX-CYCLE: a message in a ring of queues that only "
     "expire is dropped on its second visit\"; tests/unit/transport/in_memory/dead_lettering.cpp: "
     "\"DLX-19 expiries that would cycle back into their own queue are dropped\"; RabbitMQ docs, "
     "dlx (\"if there was no rejection in the entire cycle\"); rabbit_dead_letter.erl "
     "detect_cycles (v4.0.0)."},
    {codes::dlx_ring, severity::error, "false dead-letter cycle on 3.10",
     "A cycle with a rejection and two or more queues that dead-letter by expiry in a row "
     "(reject, expire, expire) comes back after its first lap, but RabbitMQ 3.10-3.12 reorder "
     "x-death, see a cycle without a rejection and drop the message on the second lap.",
     "Keep one expiring queue between two rejections (the letterbox retry topology does), or run "
     "RabbitMQ 3.13 or later.",
     &detail::reverses_x_death,
     "tests/unit/lint/ground_truth.cpp: \"LB-DLX-RING: a reject-expire-expire ring loses the "
     "message on its second lap on 3.10 and not on 3.13\"; "
     "tests/unit/transport/in_memory/dead_lettering.cpp: \"DLX-06 a reject-expire-expire ring "
     "comes back after lap 1 and is dropped as a false cycle on lap 2 on 3.10 (§0.3 7)\"; seen on "
     "RabbitMQ 3.10.8 (research/reliability-anchors.md §0.3 6-7); rabbit_dead_letter.erl "
     "group_by_queue_and_reason (v3.10.0), replaced in 3.13 (rabbitmq-server#11048)."},
    {codes::requeue_unbounded, severity::warning, "requeue without a limit",
     "A consumer requeues what fails without limiting attempts, so a poison message is "
     "redelivered forever: an error on a classic queue (no delivery limit) or a quorum queue "
     "without an effective limit (on 4.3 a basic.nack requeue, which letterbox uses, no longer "
     "counts toward it), a warning on a quorum queue whose delivery limit ends it.",
     "Limit the attempts (a retry policy's max_attempts) and dead-letter what is left, or give "
     "the quorum queue an x-delivery-limit and a dead-letter exchange.",
     &detail::every_version,
     "tests/unit/lint/ground_truth.cpp: \"LB-REQUEUE-UNBOUNDED: a classic queue redelivers a "
     "requeued message without end and a quorum queue with a limit stops\"; RabbitMQ docs, "
     "classic-queues#features (\"Classic queues do not support poison message handling\")."},
    {codes::qq_delivery_limit_default, severity::warning, "quorum queue default delivery limit",
     "From RabbitMQ 4.0 a quorum queue without a delivery limit has one of 20: a message returned "
     "20 times is dead-lettered, or dropped when the queue has no dead-letter exchange (a "
     "warning); an error for a dead-letter queue on 4.0-4.2, whose scans requeue with "
     "basic.nack, which counts there (4.3 counts only rejects and lost channels).",
     "Set x-delivery-limit (or a delivery-limit policy) to what the consumer needs, with a "
     "dead-letter exchange; on dead-letter queues use a delivery-limit -1 policy (4.0+).",
     &detail::has_default_delivery_limit,
     "tests/unit/lint/ground_truth.cpp: \"LB-QQ-DELIVERY-LIMIT-DEFAULT: on 4.0 a quorum queue "
     "without a limit drops a message after 20 returns and 3.10 keeps it\"; RabbitMQ 4.0.1 "
     "release notes (\"Quorum Queues Now Have a Default Redelivery Limit\", "
     "rabbitmq-server#11937); rabbit_quorum_queue.erl (v4.0.0)."},
    {codes::qq_delivery_limit_negative, severity::error, "negative delivery limit before 4.0",
     "Before RabbitMQ 4.0 a negative x-delivery-limit is compared as it is, so a quorum queue "
     "dead-letters (or drops) every message at its first return.",
     "Leave x-delivery-limit unset (unlimited before 4.0) or give it a positive value.",
     &detail::negative_delivery_limit_is_not_unlimited,
     "tests/unit/lint/ground_truth.cpp: \"LB-QQ-DELIVERY-LIMIT-NEGATIVE: a delivery limit of -1 "
     "drops a message at its first return on 3.10 and never on 4.0\"; "
     "tests/unit/transport/in_memory/ttl_and_limits.cpp: \"x-delivery-limit -1 on 3.10 removes "
     "the message at its first return\"; seen on RabbitMQ 3.10.8."},
    {codes::qq_argument, severity::error, "argument the queue type refuses",
     "RabbitMQ refuses the declaration with 406: a quorum queue takes no x-max-priority, "
     "x-queue-mode, x-queue-version, x-queue-master-locator or stream arguments and must be "
     "durable, non-exclusive and not auto-delete; a classic queue takes no quorum or stream "
     "arguments (x-delivery-limit, x-dead-letter-strategy, x-quorum-initial-group-size, ...).",
     "Remove the argument or property, or declare the queue with the type that takes it.",
     &detail::every_version,
     "tests/unit/lint/ground_truth.cpp: \"LB-QQ-ARGUMENT: the broker refuses a quorum queue with "
     "x-max-priority and a classic queue with x-delivery-limit\"; tests/integration/"
     "amqp_differential.cpp: \"differential: what a quorum queue declaration refuses agrees with "
     "RabbitMQ\"; rabbit_amqqueue.erl check_declare_arguments, rabbit_queue_type_util.erl."},
    {codes::qq_overflow_dlx, severity::warning, "reject-publish-dlx on a quorum queue",
     "A quorum queue accepts x-overflow reject-publish-dlx but runs it as drop-head: publishes "
     "are confirmed and the oldest messages are dead-lettered instead of the new one refused.",
     "Use reject-publish (publishers get a nack) or drop-head deliberately.",
     &detail::every_version,
     "tests/unit/lint/ground_truth.cpp: \"LB-QQ-OVERFLOW-DLX: a quorum queue with "
     "reject-publish-dlx accepts the publish and drops the head\"; "
     "tests/unit/transport/in_memory/dead_lettering.cpp: \"DLX-13 reject-publish-dlx on a quorum "
     "queue is accepted and behaves like drop-head ...\"; seen on RabbitMQ 3.10.8; "
     "rabbit_quorum_queue.erl overflow/3 (v3.10.0, v3.13.0, v4.0.0)."},
    {codes::at_least_once_fallback, severity::error, "at-least-once dead-lettering disabled",
     "x-dead-letter-strategy at-least-once needs x-overflow reject-publish and a dead-letter "
     "exchange: without the first RabbitMQ falls back to at-most-once, without the second it "
     "dead-letters nothing, and only logs a warning.",
     "Add x-overflow reject-publish and a dead-letter exchange, or drop the strategy.",
     &detail::every_version,
     "tests/unit/topology/queue.cpp: \"at-least-once dead-lettering that RabbitMQ would quietly "
     "downgrade is refused\"; seen on RabbitMQ 3.10.8; rabbit_quorum_queue.erl dlh/5 (v4.0.0); "
     "RabbitMQ docs, quorum-queues#dead-lettering."},
    {codes::qq_global_qos, severity::error, "global qos on a quorum queue",
     "Consuming from a quorum queue on a channel with basic.qos global=true fails with 540 "
     "NOT_IMPLEMENTED, which closes the whole connection (4.3 denies global qos by default and "
     "turns it into a per-consumer limit).",
     "Use a per-consumer prefetch (basic.qos global=false).", &detail::permits_global_qos,
     "tests/unit/lint/ground_truth.cpp: \"LB-QQ-GLOBAL-QOS: consuming a quorum queue with global "
     "qos closes the connection with 540, and not on 4.3\"; tests/integration/"
     "amqp_differential.cpp: \"differential: 540 NOT_IMPLEMENTED closes the connection like on "
     "RabbitMQ\"; RabbitMQ 4.3.0 release notes (global_qos denied by default)."},
    {codes::inbox_retention, severity::error, "inbox forgets before the last redelivery",
     "The inbox forgets a message id before the message's last redelivery can arrive, so a late "
     "duplicate is handled again and its effects happen twice.",
     "Keep inbox records at least as long as the redelivery horizon, or shorten the retry "
     "schedule.",
     &detail::every_version,
     "tests/unit/lint/check_topology.cpp: \"LB-INBOX-RETENTION is reported for an inbox "
     "retention shorter than the redelivery horizon and only then\"; middleware::compose's "
     "check_dedup_window (DESIGN §3.8)."},
    {codes::retry_no_route_back, severity::error, "retry queue does not lead back",
     "A retry queue must hold a message for its TTL and then dead-letter it back to the "
     "consumer's queue; one that is missing, has no x-message-ttl or dead-letters elsewhere "
     "never returns the message.",
     "Declare the retry queues from topology::retry_topology, with x-message-ttl and a "
     "dead-letter exchange and key that route to the consumer's queue.",
     &detail::every_version,
     "tests/unit/lint/ground_truth.cpp: \"LB-RETRY-NO-ROUTE-BACK: a retry queue whose "
     "dead-letter key names another queue never returns the message\"."},
    {codes::xdeath_client, severity::warning, "attempts counted from x-death",
     "RabbitMQ 3.13.0-3.13.2 and 4.x ignore an x-death header a client publishes, so a message "
     "republished by a client (a dead-letter replay, a shovel) starts a new x-death history and "
     "its attempts are counted from zero again.",
     "Count attempts in a header of your own (letterbox's attempt header) rather than x-death.",
     &detail::ignores_client_x_death,
     "tests/unit/lint/ground_truth.cpp: \"LB-XDEATH-CLIENT: a republished message starts a new "
     "x-death history on 4.0 and keeps it on 3.10\"; RabbitMQ 4.0.1 release notes (\"AMQP 0.9.1 "
     "x-death header\"); RabbitMQ 3.13.3 release notes (rabbitmq-server#11339)."},
    {codes::topic_hash_words, severity::error, "too many # in a topic binding",
     "RabbitMQ 4.3 refuses a topic binding key with more than two # words (406), so the "
     "binding cannot be declared.",
     "Rewrite the binding key with at most two # words.", &detail::limits_topic_hash_words,
     "tests/unit/lint/ground_truth.cpp: \"LB-TOPIC-HASH-WORDS: a binding with three hash words is "
     "refused on 4.3 and accepted on 3.10\"; rabbitmq-server commit 0f390a2717 (\"Topic "
     "exchanges: limit the number of multi-segment matchers\")."},
    {codes::policy_ignored, severity::warning, "policy ignored for a queue type",
     "A policy that holds a key the queue's type does not support does not apply to that queue at "
     "all, not even its other keys; the next matching policy applies instead.",
     "Split the policy in one per queue type (apply-to classic_queues / quorum_queues) with only "
     "the keys that type supports.",
     &detail::every_version,
     "rabbit_policy.erl matches/2 (v3.10.0) and rabbit_queue_type.erl is_policy_applicable "
     "(v4.0.0); rabbitmq-server#7350."},
    {codes::policy_pattern, severity::warning, "policy pattern invalid",
     "A policy pattern that is not a valid regular expression (or is too long to check) matches "
     "nothing here, so the lint cannot tell what it applies to.",
     "Fix the regular expression.", &detail::every_version,
     "RabbitMQ docs, policies (a pattern is a regular expression matched against names)."},
}};

/// The rule with this code, or null.
inline constexpr const rule* find_rule(std::string_view code) noexcept {
    for (const auto& r : rules)
        if (r.code == code)
            return &r;
    return nullptr;
}

} // namespace letterbox::lint
