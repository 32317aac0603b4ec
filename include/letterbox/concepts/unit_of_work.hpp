// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <concepts>
#include <functional>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A local transaction that stores write into: staged writes take effect together on
/// `commit()` or not at all.
///
/// Requirements, for `u` of type `U&` and `f` of type `std::function<void()>`:
/// 1. `std::move_constructible<U>` (units of work are returned by a `begin()` factory);
/// 2. `u.commit()` returns `std::error_code`;
/// 3. `u.rollback()` returns `std::error_code`;
/// 4. `u.on_commit(f)` returns `std::error_code`.
///
/// Semantics:
/// - `commit()` applies every write staged in the unit, in every store that staged one, or none
///   of them, and returns the reason when it applied none. After `commit()` returns, whatever
///   its result, the unit is finished.
/// - `rollback()` discards the staged writes. Destroying an unfinished unit rolls it back.
/// - Using a finished unit (`commit`, `rollback`, `on_commit`, or a store write into it)
///   returns `errc::transaction_closed`.
/// - Callbacks registered with `on_commit` run, in registration order, after a successful
///   commit and only then (this is how the outbox relay is woken).
/// - Expected failures are reported, never thrown.
/// - A unit of work is used by one thread at a time.
///
/// Does not require: default construction, copying or assignment, nested units, or a way to
/// begin one (each model has its own: a connection for SQL, nothing for the in-memory stores).
///
/// Models: `in_memory_unit_of_work`; the SQLite unit of work (component `letterbox::sqlite`);
/// the PostgreSQL one (component `letterbox::postgres`).
/// Archetype: `letterbox::testing::unit_of_work_archetype`.
template <class U>
concept unit_of_work = std::move_constructible<U> && requires(U& u, std::function<void()> f) {
    { u.commit() } -> std::same_as<std::error_code>;
    { u.rollback() } -> std::same_as<std::error_code>;
    { u.on_commit(std::move(f)) } -> std::same_as<std::error_code>;
};

/// A unit of work that can mark a savepoint in its transaction and later keep or discard what
/// was staged after it, while the unit stays open: how several messages share one transaction
/// and a failing one leaves the others' writes in place (group commit, docs/group-commit.md).
///
/// Requirements, for `u` of type `U&`: `U` models `unit_of_work`, and `u.savepoint()`,
/// `u.release_savepoint()` and `u.rollback_to_savepoint()` each return `std::error_code`.
///
/// Semantics:
/// - `savepoint()` marks the current point. Marks nest: each release or rollback ends the
///   latest one.
/// - `release_savepoint()` keeps what was staged since the latest mark, in the unit: it is
///   committed, or rolled back, with the rest of it.
/// - `rollback_to_savepoint()` discards the writes and the `on_commit` callbacks staged since
///   the latest mark, and the unit stays open.
/// - Without a mark, the last two return `errc::precondition_failed` and change nothing. On a
///   finished unit all three return `errc::transaction_closed`. A unit that a store failure
///   has already rolled back as a whole returns that failure: what it had staged before the
///   mark is gone too.
///
/// Models: `in_memory_unit_of_work`; the SQLite unit of work (`SAVEPOINT`, `RELEASE`,
/// `ROLLBACK TO`).
template <class U>
concept savepoint_unit_of_work = unit_of_work<U> && requires(U& u) {
    { u.savepoint() } -> std::same_as<std::error_code>;
    { u.release_savepoint() } -> std::same_as<std::error_code>;
    { u.rollback_to_savepoint() } -> std::same_as<std::error_code>;
};

/// `S` names the unit of work its writes are staged in: `S::unit_of_work_type`.
template <class S>
concept has_unit_of_work = unit_of_work<typename S::unit_of_work_type>;

} // namespace letterbox
