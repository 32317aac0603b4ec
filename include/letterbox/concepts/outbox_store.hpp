// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/store_time.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The opt-in tag of `outbox_store`: a model declares
/// `using outbox_store_concept = letterbox::outbox_store_tag;`.
struct outbox_store_tag {};

/// `S` declares that it keeps the semantic contract of `outbox_store`.
template <class S>
concept outbox_store_opted_in =
    std::derived_from<typename S::outbox_store_concept, outbox_store_tag>;

/// `S` appends an entry inside the caller's unit of work.
template <class S>
concept outbox_writer = requires(S& s, typename S::unit_of_work_type& u, const outbox_entry& e,
                                 store_time now) {
    { s.add(u, e, now) } -> std::same_as<std::error_code>;
};

/// `S` leases batches of due rows to an owner, and releases leases that expired.
template <class S>
concept outbox_claimer = requires(S& s, std::string_view owner, std::size_t n,
                                  store_time::duration lease, store_time now, std::error_code& ec) {
    { s.claim(owner, n, lease, now, ec) } -> std::same_as<std::vector<outbox_record>>;
    { s.release_expired_leases(now, ec) } -> std::same_as<std::size_t>;
};

/// `S` settles a leased row: published, or failed and to be retried (or parked).
template <class S>
concept outbox_settler = requires(S& s, const message_id& id, std::string_view owner,
                                  std::string_view error, store_time at, std::uint32_t max,
                                  store_time now) {
    { s.mark_published(id, owner, now) } -> std::same_as<std::error_code>;
    { s.record_failure(id, owner, error, at, max, now) } -> std::same_as<std::error_code>;
};

/// `S` marks many leased rows published in one operation (one transaction).
///
/// An optional capability of an `outbox_store`, not part of that concept: `outbox_relay` uses
/// it when the store provides it, and otherwise marks rows one `mark_published` at a time.
///
/// Semantics: `s.mark_published(ids, owner, now, results)` is equivalent to calling
/// `s.mark_published(id, owner, now)` for each id of `ids` in order (a repeated id is therefore
/// `errc::lease_lost` the second time), atomically with respect to every other operation.
/// `results` is resized to `ids.size()` and holds each row's outcome, at the id's index:
/// success, `errc::lease_lost` or `errc::record_not_found`, as the single call would return.
/// The returned code is a store-level failure (a database error, an injected fault): then
/// nothing was marked and every element of `results` is that error. An empty `ids` marks
/// nothing and succeeds. A durable store applies the whole batch in one transaction; that is
/// the point of the capability (one commit instead of one per row).
///
/// Models: `in_memory_outbox_store`, `sqlite::outbox_store`, `postgres::outbox_store`.
template <class S>
concept outbox_batch_settler = requires(S& s, std::span<const message_id> ids,
                                        std::string_view owner, store_time now,
                                        std::vector<std::error_code>& results) {
    { s.mark_published(ids, owner, now, results) } -> std::same_as<std::error_code>;
};

/// `S` lets an operator park and unpark rows, and purges published rows after retention.
template <class S>
concept outbox_maintainer = requires(S& s, const message_id& id, std::string_view reason,
                                     store_time now, std::error_code& ec) {
    { s.park(id, reason) } -> std::same_as<std::error_code>;
    { s.unpark(id, now) } -> std::same_as<std::error_code>;
    { s.purge_published(now, ec) } -> std::same_as<std::size_t>;
};

/// `S` shows its rows and counts without changing them.
template <class S>
concept outbox_reader = requires(S& s, const message_id& id, const outbox_query& q, store_time now,
                                 std::error_code& ec) {
    { s.find(id, ec) } -> std::same_as<std::optional<outbox_record>>;
    { s.list(q, ec) } -> std::same_as<std::vector<outbox_record>>;
    { s.stats(now, ec) } -> std::same_as<outbox_stats>;
};

/// A table of events waiting to be published, written in the caller's transaction and drained
/// by a relay under leases, in per-aggregate order (the transactional outbox).
///
/// Requirements, for `s` of type `S&`, `u` of type `S::unit_of_work_type&`, `id` a
/// `message_id`, `owner`, `error` and `reason` `std::string_view`s, times of type `store_time`
/// and `ec` a `std::error_code&`:
/// 1. `S::outbox_store_concept` names `outbox_store_tag` (opt-in);
/// 2. `S::unit_of_work_type` models `unit_of_work`;
/// 3. `s.add(u, entry, now)` -> `std::error_code`;
/// 4. `s.claim(owner, max_rows, lease, now, ec)` -> `std::vector<outbox_record>`, where
///    `lease` is a `store_time::duration`;
/// 5. `s.release_expired_leases(now, ec)` -> `std::size_t`;
/// 6. `s.mark_published(id, owner, now)` -> `std::error_code`;
/// 7. `s.record_failure(id, owner, error, next_attempt_at, max_attempts, now)` ->
///    `std::error_code`, where `max_attempts` is a `std::uint32_t`;
/// 8. `s.park(id, reason)` and `s.unpark(id, now)` -> `std::error_code`;
/// 9. `s.purge_published(older_than, ec)` -> `std::size_t`;
/// 10. `s.find(id, ec)` -> `std::optional<outbox_record>`, `s.list(query, ec)` ->
///     `std::vector<outbox_record>`, `s.stats(now, ec)` -> `outbox_stats`.
///
/// Semantics (what the syntax cannot say):
/// - **Errors.** Operations report failures through the returned or out-param
///   `std::error_code` and do not throw for expected failures (a duplicate, a lost lease, an
///   unknown id, a database error); `ec` is cleared on success. Rows are identified by their
///   message id.
/// - **Time.** A store never reads a clock: "now" is always an argument. A lease is held while
///   `now < lease_expires_at`. Times round-trip with at least millisecond precision.
/// - **add** stages the entry in `u`: it is invisible to every other operation until `u`
///   commits, and a rollback leaves no trace. The store sets `sequence` (commit order),
///   `created_at = now`, `next_attempt_at = now`, status pending, no attempts. A message id
///   that the store already holds, or that `u` already staged, is refused with
///   `errc::duplicate_message_id` and `u` stays usable; so is an entry whose body is invalid
///   for its declared content type, with `errc::payload_malformed` (see `validate_payload`); if a
///   concurrent unit commits the same id first, the later unit's `commit()` fails with
///   `errc::duplicate_message_id`.
/// - **claim** returns at most `max_rows` rows in sequence order and leases each to `owner`
///   until `now + lease`. A row is claimable when it is pending, `next_attempt_at <= now`, it
///   holds no unexpired lease (an expired lease is taken over: no call to
///   `release_expired_leases` is needed), and **no earlier row of the same (aggregate type,
///   aggregate id) is unpublished**: pending, leased, waiting for a retry, or parked. A parked
///   event therefore blocks the rest of its aggregate until it is unpublished by `unpark` and
///   then published (MassTransit and NServiceBus keep order the same way). At most one event
///   per aggregate is in flight. Rows with an empty aggregate id are ordered by nothing.
///   `owner` must not be empty and should be unique per relay instance.
/// - **mark_published** and **record_failure** succeed only for a pending row whose lease
///   owner is `owner`; otherwise `errc::lease_lost` (another owner took it over, the lease was
///   released, the row was parked or already settled), or `errc::record_not_found` for an
///   unknown id. An expired lease that nobody took over still counts as held.
///   `mark_published` sets status published and `published_at = now` and drops the lease.
///   `record_failure` increments `attempts`, stores `error` as `last_error` and
///   `last_failure_at = now`, drops the lease and sets `next_attempt_at`; when `attempts`
///   reaches `max_attempts` the row is parked instead, with `error` as its reason.
/// - **park** parks a pending (possibly leased) row with `reason` as `last_error` and drops
///   its lease; parking a parked row just replaces the reason. **unpark** makes a parked row
///   pending with `attempts = 0` and `next_attempt_at = now`; it keeps its sequence, so it is
///   again the head of its aggregate. Both fail with `errc::invalid_state` when the row
///   is in the wrong status and `errc::record_not_found` for an unknown id.
/// - **release_expired_leases** drops every lease with `lease_expires_at <= now`; returns how
///   many. **purge_published** deletes published rows with `published_at < older_than`;
///   returns how many. Parked and pending rows are never purged.
/// - **Reads** (`find`, `list`, `stats`) see committed state only and change nothing.
/// - **Threads.** Every operation may be called concurrently from several threads; a claimed
///   row is leased to exactly one claimer at a time.
///
/// Does not require: durability, fairness among claimers, const-callable reads, a particular
/// schema, that the store publish anything (the relay does), or exactly-once hand-out across a
/// lease expiry (an owner whose lease was taken over may still publish: delivery is
/// at-least-once and consumers deduplicate by message id).
///
/// Optional: a model may also provide `outbox_batch_settler` (many rows marked published in one
/// call, one transaction); `outbox_relay` then settles its confirmed rows in batches, and
/// otherwise with one `mark_published` per row.
///
/// Models: `in_memory_outbox_store`; `sqlite::outbox_store` (component `letterbox::sqlite`);
/// `postgres::outbox_store` (component `letterbox::postgres`).
/// Archetype: `letterbox::testing::outbox_store_archetype`. Conformance suite:
/// `letterbox/testing/outbox_store_suite.hpp`.
template <class S>
concept outbox_store = outbox_store_opted_in<S> && has_unit_of_work<S> && outbox_writer<S> &&
    outbox_claimer<S> && outbox_settler<S> && outbox_maintainer<S> && outbox_reader<S>;

} // namespace letterbox
