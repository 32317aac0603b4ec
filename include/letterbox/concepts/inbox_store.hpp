// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>

#include <concepts>
#include <cstddef>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The opt-in tag of `inbox_store`: a model declares
/// `using inbox_store_concept = letterbox::inbox_store_tag;`.
struct inbox_store_tag {};

/// `S` declares that it keeps the semantic contract of `inbox_store`.
template <class S>
concept inbox_store_opted_in = std::derived_from<typename S::inbox_store_concept, inbox_store_tag>;

/// `S` records a (consumer id, message id) key inside the caller's unit of work.
template <class S>
concept inbox_recorder = requires(S& s, typename S::unit_of_work_type& u, std::string_view consumer,
                                  const message_id& id, store_time now) {
    { s.try_record(u, consumer, id, now) } -> std::same_as<std::error_code>;
};

/// `S` answers whether a key was recorded, and how many keys it holds.
template <class S>
concept inbox_reader = requires(S& s, std::string_view consumer, const message_id& id,
                                std::error_code& ec) {
    { s.contains(consumer, id, ec) } -> std::same_as<bool>;
    { s.size(ec) } -> std::same_as<std::size_t>;
};

/// `S` deletes records older than a retention horizon.
template <class S>
concept inbox_purger = requires(S& s, store_time older_than, std::error_code& ec) {
    { s.purge(older_than, ec) } -> std::same_as<std::size_t>;
};

/// A set of (consumer id, message id) keys, written in the same transaction as a consumer's
/// effect, so that each message has its effect once per consumer however often it is delivered
/// (the inbox, or idempotent consumer).
///
/// Requirements, for `s` of type `S&`, `u` of type `S::unit_of_work_type&`, `consumer` a
/// `std::string_view`, `id` a `message_id`, times of type `store_time` and `ec` a
/// `std::error_code&`:
/// 1. `S::inbox_store_concept` names `inbox_store_tag` (opt-in);
/// 2. `S::unit_of_work_type` models `unit_of_work`;
/// 3. `s.try_record(u, consumer, id, now)` -> `std::error_code`;
/// 4. `s.contains(consumer, id, ec)` -> `bool`;
/// 5. `s.size(ec)` -> `std::size_t`;
/// 6. `s.purge(older_than, ec)` -> `std::size_t`.
///
/// Semantics (what the syntax cannot say):
/// - **Errors.** Operations report failures through the returned or out-param
///   `std::error_code` and do not throw for expected failures (a duplicate, a database
///   error); `ec` is cleared on success.
/// - **try_record** returns success when the key is new: the record is staged in `u`, stamped
///   `now`, and exists only if `u` commits. It returns `errc::already_processed` when the key
///   is already recorded or already staged in `u`; `u` stays usable.
/// - **The unique key decides, at commit.** "Already processed" is never decided by a read
///   followed by a write. When two units record the same key concurrently, exactly one of
///   them commits it; the other learns `errc::already_processed` either from `try_record`
///   (the store serialised the units) or from its `commit()`, which then applies none of its
///   staged writes, in any store.
/// - A rollback leaves no record: the message counts as new again.
/// - **The nil id is never a key.** `try_record` with the nil `message_id` (what a message
///   published without an AMQP `message-id` carries) returns `errc::missing_idempotency_key`
///   and stages nothing; `u` stays usable. Recording it would make every id-less message after
///   the first look like a duplicate of it.
/// - Keys are per consumer: one message id recorded by two consumers is two records.
/// - **purge** deletes records stamped before `older_than` and returns how many; a purged key
///   counts as new again, so retention must exceed the redelivery horizon (DESIGN §3.8).
/// - **Reads** (`contains`, `size`) see committed records only.
/// - **Threads.** Every operation may be called concurrently from several threads.
///
/// Does not require: durability, that the store remember anything but the key and its time,
/// const-callable reads, or a particular schema.
///
/// Models: `in_memory_inbox_store`; `sqlite::inbox_store` (component `letterbox::sqlite`);
/// `postgres::inbox_store` (component `letterbox::postgres`).
/// Archetype: `letterbox::testing::inbox_store_archetype`. Conformance suite:
/// `letterbox/testing/inbox_store_suite.hpp`.
template <class S>
concept inbox_store = inbox_store_opted_in<S> && has_unit_of_work<S> && inbox_recorder<S> &&
    inbox_reader<S> && inbox_purger<S>;

} // namespace letterbox
