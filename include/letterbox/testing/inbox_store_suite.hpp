// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/detail/store_harness.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What an `inbox_store` model can do beyond the concept, declared by its suite fixture.
struct inbox_store_features {
    /// The suite may call the store and open a second unit of work on a thread that holds an
    /// open unit of work. Set it to false when an open unit of work holds a lock that those
    /// calls would wait for (a SQLite `BEGIN IMMEDIATE` on the connection the store uses);
    /// the checks that need it then warn and skip that part. Concurrent units on different
    /// threads are always checked.
    bool overlapping_units_of_work = true;
};

/// What one check of the suite is given: the store under test (`Store& store`), a way to begin
/// a unit of work for it (`begin()`) and the model's features (`features`). An aggregate:
/// `{store, begin, features}`.
template <inbox_store Store>
struct inbox_store_harness : detail::store_harness<Store, inbox_store_features> {};

} // namespace letterbox::testing

#include <letterbox/testing/detail/inbox_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_case.hpp>

/// Expands the `inbox_store` conformance suite: one Catch2 `TEMPLATE_LIST_TEST_CASE` per
/// check, each run once per fixture in the `std::tuple` named by `fixtures`.
///
/// A fixture is a type with:
/// - `static auto make()`, returning (by value) a context `ctx` that owns an **empty** store,
///   with `ctx.store()` returning `Store&` (a model of `inbox_store`) and `ctx.begin()`
///   returning a new `Store::unit_of_work_type`; `begin()` may be called from several threads;
/// - optionally `static constexpr letterbox::testing::inbox_store_features features{...};`.
///
/// Each check gets a fresh context. Test names are "inbox_store conformance: <check> -
/// <fixtures> - <index>", so give the tuple a name specific to the model
/// (`sqlite_inbox_fixtures`), which keeps names unique in a test executable. Tags:
/// `[conformance][inbox_store]`, plus `[threads]` on the checks that start threads. The
/// randomized check derives its seeds from `letterbox::testing::test_seed()` (set
/// `LETTERBOX_SEED` to replay).
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
///     using my_inbox_fixtures = std::tuple<my_fixture>;
///     LETTERBOX_INBOX_STORE_SUITE(my_inbox_fixtures)
#define LETTERBOX_INBOX_STORE_SUITE(fixtures)                                                      \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "the first record of a key wins", "",                    \
                                inbox_check_first_record_wins)                                     \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "a duplicate is detected after commit", "",              \
                                inbox_check_duplicate_after_commit)                                \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "a duplicate within one uncommitted unit is detected",   \
                                "", inbox_check_duplicate_within_unit)                             \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "savepoints keep or discard the records after them",     \
                                "[group_commit]", inbox_check_savepoints_keep_or_discard_records)  \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "of two overlapping units recording a key one commits",  \
                                "", inbox_check_overlapping_units_one_commits)                     \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "of two threads recording a key exactly one commits",    \
                                "[threads]", inbox_check_concurrent_threads_one_commits)           \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "a rolled-back unit leaves no record", "",               \
                                inbox_check_rollback_removes_record)                               \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "a finished unit of work refuses try_record", "",        \
                                inbox_check_finished_unit_of_work_is_closed)                       \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "keys are per consumer", "",                             \
                                inbox_check_keys_are_per_consumer)                                 \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "the nil message id is refused and never recorded", "",  \
                                inbox_check_nil_id_is_refused)                                     \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures, "purge deletes records older than the horizon", "",      \
                                inbox_check_purge_by_age)                                          \
    LETTERBOX_DETAIL_INBOX_CASE(fixtures,                                                          \
                                "random duplicated and reordered deliveries record each key once", \
                                "", inbox_check_random_deliveries_record_once_seeded)

#define LETTERBOX_DETAIL_INBOX_CASE(fixtures, name, tags, check)                                   \
    LETTERBOX_DETAIL_STORE_CASE(inbox_store, run_inbox_store_check, fixtures, name, tags, check)
