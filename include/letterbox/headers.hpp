// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string_view>

/// Well-known message header names. Code never spells these as string literals elsewhere.
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::headers {

// --- letterbox's own headers ------------------------------------------------------------
// Attempts live in the message (DESIGN §3.4): they survive a consumer crash and scale-out.

/// How many times letterbox handlers have attempted this message (a long).
inline constexpr std::string_view attempts = "x-letterbox-attempts";
/// Why the message was dead-lettered by letterbox (a longstr).
inline constexpr std::string_view death_reason = "x-letterbox-death-reason";
/// The exception type that caused the last failure (a longstr).
inline constexpr std::string_view exception_type = "x-letterbox-exception-type";
/// The exception message of the last failure (a longstr).
inline constexpr std::string_view exception_message = "x-letterbox-exception-message";
/// When the first and the last failure happened (RFC 3339 UTC longstr with milliseconds,
/// e.g. `2026-11-30T09:15:02.250Z`).
inline constexpr std::string_view first_failure_time = "x-letterbox-first-failure-time";
inline constexpr std::string_view last_failure_time = "x-letterbox-last-failure-time";
/// Where the message was consumed when it failed.
inline constexpr std::string_view original_exchange = "x-letterbox-original-exchange";
inline constexpr std::string_view original_routing_key = "x-letterbox-original-routing-key";
inline constexpr std::string_view original_queue = "x-letterbox-original-queue";
/// The consumer id (inbox key) that failed to handle the message.
inline constexpr std::string_view consumer_id = "x-letterbox-consumer-id";
/// When letterbox dead-lettered the message (an RFC 3339 UTC longstr, like the failure times).
inline constexpr std::string_view dead_lettered_time = "x-letterbox-dead-lettered-time";
/// How many times the message was replayed from a dead-letter queue (a long), and when it
/// was last replayed (RFC 3339 UTC longstr).
inline constexpr std::string_view replay_count = "x-letterbox-replay-count";
inline constexpr std::string_view replayed_time = "x-letterbox-replayed-time";
/// The broker's `x-death` history the message carried when it was replayed (an array of
/// tables). Replay moves `x-death` here so that the replayed message starts with a clean
/// attempt count and the history is still visible.
inline constexpr std::string_view death_history = "x-letterbox-death-history";
/// The aggregate a message belongs to (outbox ordering key).
inline constexpr std::string_view aggregate_type = "x-letterbox-aggregate-type";
inline constexpr std::string_view aggregate_id = "x-letterbox-aggregate-id";
/// The message group (a longstr): a consumer with `consumer_options::groups` handles the
/// messages of one group one at a time, in order (docs/message-groups.md).
inline constexpr std::string_view group = "x-letterbox-group";
/// The deduplication id a producer chose (a longstr); without it, the message id is the one.
/// `idempotency_key::by_dedup_id` reads it.
inline constexpr std::string_view dedup_id = "x-letterbox-dedup-id";
/// The message that caused this one (its id's text), and the conversation it belongs to (the
/// id of the message that began it, or what the first one carried): `caused_by` sets both
/// (docs/tracing.md). The conversation is letterbox's own header, not the AMQP
/// `correlation_id`, which request/reply and sagas use to match a reply to its request.
inline constexpr std::string_view causation_id = "x-letterbox-causation-id";
inline constexpr std::string_view conversation_id = "x-letterbox-conversation-id";
/// W3C Trace Context, as OpenTelemetry's messaging instrumentations carry it in AMQP headers.
inline constexpr std::string_view traceparent = "traceparent";
inline constexpr std::string_view tracestate = "tracestate";
/// A saga's command and the reply to it (longstrs, docs/sagas.md): the saga's type and
/// instance id, the step, the phase (`invoke` or `compensate`); on the reply, the outcome
/// (`success` or `failure`) and, for a failure, its reason.
inline constexpr std::string_view saga_type = "x-letterbox-saga-type";
inline constexpr std::string_view saga_id = "x-letterbox-saga-id";
inline constexpr std::string_view saga_step = "x-letterbox-saga-step";
inline constexpr std::string_view saga_phase = "x-letterbox-saga-phase";
inline constexpr std::string_view saga_outcome = "x-letterbox-saga-outcome";
inline constexpr std::string_view saga_reason = "x-letterbox-saga-reason";

// --- RabbitMQ's headers -----------------------------------------------------------------

/// The dead-letter history written by the broker: an array of tables, one per
/// (queue, reason), each with the fields below.
inline constexpr std::string_view x_death = "x-death";
inline constexpr std::string_view x_first_death_reason = "x-first-death-reason";
inline constexpr std::string_view x_first_death_queue = "x-first-death-queue";
inline constexpr std::string_view x_first_death_exchange = "x-first-death-exchange";
/// Written by RabbitMQ 3.13 and newer only (see `broker_profile`).
inline constexpr std::string_view x_last_death_reason = "x-last-death-reason";
inline constexpr std::string_view x_last_death_queue = "x-last-death-queue";
inline constexpr std::string_view x_last_death_exchange = "x-last-death-exchange";
/// Quorum queues: how many times the message was returned (a long).
inline constexpr std::string_view x_delivery_count = "x-delivery-count";
/// Quorum queues on RabbitMQ 4.3 and newer: how many times it was handed out.
inline constexpr std::string_view x_acquired_count = "x-acquired-count";
/// Sender-selected distribution: extra routing keys (arrays of longstr).
inline constexpr std::string_view cc = "CC";
inline constexpr std::string_view bcc = "BCC";

/// Fields of one `x-death` table.
namespace x_death_field {
inline constexpr std::string_view count = "count";
inline constexpr std::string_view reason = "reason";
inline constexpr std::string_view queue = "queue";
inline constexpr std::string_view time = "time";
inline constexpr std::string_view exchange = "exchange";
inline constexpr std::string_view routing_keys = "routing-keys";
inline constexpr std::string_view original_expiration = "original-expiration";
} // namespace x_death_field

} // namespace letterbox::headers
