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
/// Models: `in_memory_unit_of_work`; the SQLite unit of work (component `letterbox::sqlite`).
/// Archetype: `letterbox::testing::unit_of_work_archetype`.
template <class U>
concept unit_of_work = std::move_constructible<U> && requires(U& u, std::function<void()> f) {
    { u.commit() } -> std::same_as<std::error_code>;
    { u.rollback() } -> std::same_as<std::error_code>;
    { u.on_commit(std::move(f)) } -> std::same_as<std::error_code>;
};

/// `S` names the unit of work its writes are staged in: `S::unit_of_work_type`.
template <class S>
concept has_unit_of_work = unit_of_work<typename S::unit_of_work_type>;

} // namespace letterbox
