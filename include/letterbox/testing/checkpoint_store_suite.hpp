// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/checkpoint_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/detail/store_harness.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What a `checkpoint_store` model can do beyond the concept, declared by its suite fixture.
struct checkpoint_store_features {
    /// The suite may call the store and open a second unit of work on a thread that holds an
    /// open unit of work. Set it to false when an open unit of work holds a lock that those
    /// calls would wait for (a SQLite `BEGIN IMMEDIATE`); the checks that need it then warn and
    /// skip that part. Concurrent units on different threads are always checked.
    bool overlapping_units_of_work = true;
};

/// What one check of the suite is given: the store under test (`Store& store`), a way to begin
/// a unit of work for it (`begin()`) and the model's features (`features`). An aggregate:
/// `{store, begin, features}`.
template <checkpoint_store Store>
struct checkpoint_store_harness : detail::store_harness<Store, checkpoint_store_features> {};

} // namespace letterbox::testing

#include <letterbox/testing/detail/checkpoint_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_case.hpp>

/// Expands the `checkpoint_store` conformance suite: one Catch2 `TEMPLATE_LIST_TEST_CASE` per
/// check, each run once per fixture in the `std::tuple` named by `fixtures`.
///
/// A fixture is a type with:
/// - `static auto make()`, returning (by value) a context `ctx` that owns an **empty** store,
///   with `ctx.store()` returning `Store&` (a model of `checkpoint_store`) and `ctx.begin()`
///   returning a new `Store::unit_of_work_type`; `begin()` may be called from several threads;
/// - optionally `static constexpr letterbox::testing::checkpoint_store_features features{...};`.
///
/// Each check gets a fresh context. Test names are "checkpoint_store conformance: <check> -
/// <fixtures> - <index>", so give the tuple a name specific to the model
/// (`sqlite_checkpoint_fixtures`). Tags: `[conformance][checkpoint_store]`, plus `[threads]`
/// on the check that starts threads: two runners of one projection that read one checkpoint
/// and both try to move it, of which exactly one may commit.
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
///     using my_checkpoint_fixtures = std::tuple<my_fixture>;
///     LETTERBOX_CHECKPOINT_STORE_SUITE(my_checkpoint_fixtures)
#define LETTERBOX_CHECKPOINT_STORE_SUITE(fixtures)                                                 \
    LETTERBOX_DETAIL_CHECKPOINT_CASE(fixtures, "a projection without a checkpoint is at 0", "",    \
                                     checkpoint_check_zero_when_none)                              \
    LETTERBOX_DETAIL_CHECKPOINT_CASE(fixtures, "a saved checkpoint is read once its unit commits", \
                                     "", checkpoint_check_save_then_read)                          \
    LETTERBOX_DETAIL_CHECKPOINT_CASE(fixtures, "a save from a stale position applies nothing", "", \
                                     checkpoint_check_stale_save_conflicts)                        \
    LETTERBOX_DETAIL_CHECKPOINT_CASE(fixtures, "a checkpoint moves back to 0 for a rebuild", "",   \
                                     checkpoint_check_back_to_zero)                                \
    LETTERBOX_DETAIL_CHECKPOINT_CASE(fixtures, "a rolled-back unit leaves no trace", "",           \
                                     checkpoint_check_rollback_leaves_no_trace)                    \
    LETTERBOX_DETAIL_CHECKPOINT_CASE(fixtures, "invalid saves are refused", "",                    \
                                     checkpoint_check_invalid_saves_refused)                       \
    LETTERBOX_DETAIL_CHECKPOINT_CASE(fixtures,                                                     \
                                     "of two overlapping units moving a checkpoint one commits",   \
                                     "", checkpoint_check_overlapping_saves_one_commits)           \
    LETTERBOX_DETAIL_CHECKPOINT_CASE(fixtures, "of two threads moving a checkpoint one commits",   \
                                     "[threads]", checkpoint_check_concurrent_saves_one_commits)

#define LETTERBOX_DETAIL_CHECKPOINT_CASE(fixtures, name, tags, check)                              \
    LETTERBOX_DETAIL_STORE_CASE(checkpoint_store, run_checkpoint_store_check, fixtures, name,      \
                                tags, check)
