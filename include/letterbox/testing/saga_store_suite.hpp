// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/saga_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/detail/store_harness.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What a `saga_store` model can do beyond the concept, declared by its suite fixture.
struct saga_store_features {
    /// The suite may call the store and open a second unit of work on a thread that holds an
    /// open unit of work. Set it to false when an open unit of work holds a lock that those
    /// calls would wait for (a SQLite `BEGIN IMMEDIATE`); the checks that need it then warn and
    /// skip that part. Concurrent units on different threads are always checked.
    bool overlapping_units_of_work = true;
};

/// What one check of the suite is given: the store under test (`Store& store`), a way to begin
/// a unit of work for it (`begin()`) and the model's features (`features`). An aggregate:
/// `{store, begin, features}`.
template <saga_store Store>
struct saga_store_harness : detail::store_harness<Store, saga_store_features> {};

} // namespace letterbox::testing

#include <letterbox/testing/detail/saga_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_case.hpp>

/// Expands the `saga_store` conformance suite: one Catch2 `TEMPLATE_LIST_TEST_CASE` per check,
/// each run once per fixture in the `std::tuple` named by `fixtures`.
///
/// A fixture is a type with:
/// - `static auto make()`, returning (by value) a context `ctx` that owns an **empty** store,
///   with `ctx.store()` returning `Store&` (a model of `saga_store`) and `ctx.begin()`
///   returning a new `Store::unit_of_work_type`; `begin()` may be called from several threads;
/// - optionally `static constexpr letterbox::testing::saga_store_features features{...};`.
///
/// Each check gets a fresh context. Test names are "saga_store conformance: <check> -
/// <fixtures> - <index>", so give the tuple a name specific to the model
/// (`sqlite_saga_fixtures`). Tags: `[conformance][saga_store]`, plus `[threads]` on the checks
/// that start threads. The checks of concurrency are the ones a store that never raises a
/// conflict fails (the defect of NServiceBus#4150: tests that passed on an in-memory saga
/// persister, where production raised conflicts).
///
/// Example:
///
///     struct my_fixture {
///         struct context {
///             my_store store_;
///             my_store& store() { return store_; }
///             my_unit_of_work begin() { return store_.begin(); }
///         };
///         static context make() { return {}; }
///     };
///     using my_saga_fixtures = std::tuple<my_fixture>;
///     LETTERBOX_SAGA_STORE_SUITE(my_saga_fixtures)
#define LETTERBOX_SAGA_STORE_SUITE(fixtures)                                                       \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "an inserted instance is found at version 1", "",         \
                               saga_check_insert_then_find)                                        \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "an update writes the next version and keeps the key",    \
                               "", saga_check_update_writes_next_version)                          \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "an update from a stale version writes nothing", "",      \
                               saga_check_stale_update_conflicts)                                  \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "an insert of a taken id or correlation conflicts", "",   \
                               saga_check_taken_keys_conflict)                                     \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "an instance is written once per unit of work", "",       \
                               saga_check_one_write_per_unit)                                      \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "a rolled-back unit leaves no trace", "",                 \
                               saga_check_rollback_leaves_no_trace)                                \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "a finished unit of work refuses writes", "",             \
                               saga_check_finished_unit_refuses_writes)                            \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "invalid instances are refused", "",                      \
                               saga_check_invalid_instances_refused)                               \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "keys are per saga type", "",                             \
                               saga_check_keys_are_per_saga_type)                                  \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "due timeouts are listed earliest first", "",             \
                               saga_check_due_timeouts_in_order)                                   \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "a timeout dropped by an update is no longer due", "",    \
                               saga_check_dropped_timeout_not_due)                                 \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "purge deletes old finished instances only", "",          \
                               saga_check_purge_finished)                                          \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures,                                                           \
                               "of two overlapping units updating an instance one "                \
                               "commits",                                                          \
                               "", saga_check_overlapping_updates_one_commits)                     \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "of two threads updating an instance one commits",        \
                               "[threads]", saga_check_concurrent_updates_one_commits)             \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "of two threads starting one correlation one commits",    \
                               "[threads]", saga_check_concurrent_starts_one_commits)              \
    LETTERBOX_DETAIL_SAGA_CASE(fixtures, "concurrent read-modify-write loses no update",           \
                               "[threads]", saga_check_concurrent_increments_lose_nothing)

#define LETTERBOX_DETAIL_SAGA_CASE(fixtures, name, tags, check)                                    \
    LETTERBOX_DETAIL_STORE_CASE(saga_store, run_saga_store_check, fixtures, name, tags, check)
