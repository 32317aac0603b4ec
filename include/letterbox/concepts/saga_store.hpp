// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/saga_instance.hpp>
#include <letterbox/store_time.hpp>

#include <concepts>
#include <cstddef>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The opt-in tag of `saga_store`: a model declares
/// `using saga_store_concept = letterbox::saga_store_tag;`.
struct saga_store_tag {};

/// `S` declares that it keeps the semantic contract of `saga_store`.
template <class S>
concept saga_store_opted_in = std::derived_from<typename S::saga_store_concept, saga_store_tag>;

/// `S` inserts and updates instances inside the caller's unit of work.
template <class S>
concept saga_writer = requires(S& s, typename S::unit_of_work_type& u,
                               const saga_instance& instance) {
    { s.insert(u, instance) } -> std::same_as<std::error_code>;
    { s.update(u, instance) } -> std::same_as<std::error_code>;
};

/// `S` finds an instance by its id or by its correlation, and counts them.
template <class S>
concept saga_reader = requires(S& s, std::string_view key, std::error_code& ec) {
    { s.find(key, key, ec) } -> std::same_as<std::optional<saga_instance>>;
    { s.find_by_correlation(key, key, ec) } -> std::same_as<std::optional<saga_instance>>;
    { s.size(ec) } -> std::same_as<std::size_t>;
};

/// `S` lists the timeouts that are due, and deletes old finished instances.
template <class S>
concept saga_scheduler = requires(S& s, store_time t, std::size_t limit, std::error_code& ec) {
    { s.due_timeouts(t, limit, ec) } -> std::same_as<std::vector<saga_timeout_due>>;
    { s.purge_finished(t, ec) } -> std::same_as<std::size_t>;
};

/// The instances of sagas (`saga_instance`: id, correlation, state, version, JSON data and
/// pending timeouts), written in the same transaction as the inbox record of the message that
/// moved the saga and the outbox rows of the commands it sends, so that a step happens whole
/// or not at all. Writes use optimistic concurrency on the version.
///
/// Requirements, for `s` of type `S&`, `u` of type `S::unit_of_work_type&`, `instance` a
/// `const saga_instance&`, `type`, `id` and `correlation` `std::string_view`s, times of type
/// `store_time`, `limit` a `std::size_t` and `ec` a `std::error_code&`:
/// 1. `S::saga_store_concept` names `saga_store_tag` (opt-in);
/// 2. `S::unit_of_work_type` models `unit_of_work`;
/// 3. `s.insert(u, instance)` -> `std::error_code`;
/// 4. `s.update(u, instance)` -> `std::error_code`;
/// 5. `s.find(type, id, ec)` -> `std::optional<saga_instance>`;
/// 6. `s.find_by_correlation(type, correlation, ec)` -> `std::optional<saga_instance>`;
/// 7. `s.size(ec)` -> `std::size_t`;
/// 8. `s.due_timeouts(now, limit, ec)` -> `std::vector<saga_timeout_due>`;
/// 9. `s.purge_finished(older_than, ec)` -> `std::size_t`.
///
/// Semantics (what the syntax cannot say):
/// - **Errors.** Operations report failures through the returned or out-param
///   `std::error_code` and do not throw for expected failures (a conflict, a database error);
///   `ec` is cleared on success.
/// - **insert** stages a new instance in `u`, stored with version 1; `instance.version` must
///   be 0 (else `errc::precondition_failed`, nothing staged). It returns
///   `errc::concurrency_conflict`, with nothing staged and `u` still usable, when an instance
///   of the same `saga_type` already has this `id` or this `correlation`, committed or staged
///   in `u`. Empty `saga_type`, `id` or `correlation` are `errc::invalid_argument`.
/// - **Timeouts** are named, and a name appears once per instance: a write that repeats one is
///   `errc::invalid_argument`, with nothing staged. Reads give them earliest first, then by name.
/// - **update** stages `instance` in `u`, replacing the stored one (its state, data, finished
///   flag, timeouts and time) with version `instance.version + 1`, on the condition that the
///   stored version is still `instance.version` (the version the caller read) when `u`
///   commits. The correlation is the instance's for life: update keeps the stored one.
/// - **Never overwrite: the version decides, at commit.** An update whose instance is no longer
///   at the version it names (another unit updated it, or it was purged) writes nothing: the
///   store says `errc::concurrency_conflict` either from `update` (with nothing staged and `u`
///   still usable) or from `u.commit()`, which then applies none of its staged writes. Of two
///   units that update one instance from the same version, or insert the same id or
///   correlation, exactly one commits. An instance is written at most once per unit: a second
///   write of it in `u` with the version the first one read is `errc::concurrency_conflict`.
/// - A rollback leaves no trace: the instance stays as it was, or absent.
/// - **Reads** (`find`, `find_by_correlation`, `size`, `due_timeouts`) see committed instances
///   only, with the version the store gave them.
/// - **due_timeouts** lists the timeouts of committed instances whose `due` is at or before
///   `now`, earliest first (then by type, id and name), at most `limit` of them. Listing does
///   not remove them: an update that drops a timeout does.
/// - **purge_finished** deletes the finished instances whose `updated_at` is before
///   `older_than`, and returns how many; a purged instance's id and correlation are free again.
/// - **Threads.** Every operation may be called concurrently from several threads.
///
/// Does not require: durability, queries over the data, or a particular schema.
///
/// Models: `in_memory_saga_store`; `sqlite::saga_store` (component `letterbox::sqlite`).
/// Archetype: `letterbox::testing::saga_store_archetype`. Conformance suite:
/// `letterbox/testing/saga_store_suite.hpp`.
template <class S>
concept saga_store = saga_store_opted_in<S> && has_unit_of_work<S> && saga_writer<S> &&
    saga_reader<S> && saga_scheduler<S>;

} // namespace letterbox
