// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/snapshot_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/detail/store_harness.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What a `snapshot_store` model can do beyond the concept, declared by its suite fixture.
struct snapshot_store_features {
    /// The suite may call the store on a thread that holds an open unit of work. Set it to
    /// false when an open unit of work holds a lock that those calls would wait for (a SQLite
    /// `BEGIN IMMEDIATE`); the checks that need it then skip that part.
    bool overlapping_units_of_work = true;
};

/// What one check of the suite is given: the store under test (`Store& store`), a way to begin
/// a unit of work for it (`begin()`) and the model's features (`features`). An aggregate:
/// `{store, begin, features}`.
template <snapshot_store Store>
struct snapshot_store_harness : detail::store_harness<Store, snapshot_store_features> {};

} // namespace letterbox::testing

#include <letterbox/testing/detail/snapshot_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_case.hpp>

/// Expands the `snapshot_store` conformance suite: one Catch2 `TEMPLATE_LIST_TEST_CASE` per
/// check, each run once per fixture in the `std::tuple` named by `fixtures`.
///
/// A fixture is a type with:
/// - `static auto make()`, returning (by value) a context `ctx` that owns an **empty** store,
///   with `ctx.store()` returning `Store&` (a model of `snapshot_store`) and `ctx.begin()`
///   returning a new `Store::unit_of_work_type`;
/// - optionally `static constexpr letterbox::testing::snapshot_store_features features{...};`.
///
/// Each check gets a fresh context. Test names are "snapshot_store conformance: <check> -
/// <fixtures> - <index>", so give the tuple a name specific to the model
/// (`sqlite_snapshot_fixtures`). Tags: `[conformance][snapshot_store]`.
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
///     using my_snapshot_fixtures = std::tuple<my_fixture>;
///     LETTERBOX_SNAPSHOT_STORE_SUITE(my_snapshot_fixtures)
#define LETTERBOX_SNAPSHOT_STORE_SUITE(fixtures)                                                   \
    LETTERBOX_DETAIL_SNAPSHOT_CASE(fixtures, "a saved snapshot is found once its unit commits",    \
                                   "", snapshot_check_save_then_latest)                            \
    LETTERBOX_DETAIL_SNAPSHOT_CASE(fixtures, "latest picks the highest version under both bounds", \
                                   "", snapshot_check_latest_under_both_bounds)                    \
    LETTERBOX_DETAIL_SNAPSHOT_CASE(fixtures,                                                       \
                                   "a snapshot of the same version replaces the stored "           \
                                   "one",                                                          \
                                   "", snapshot_check_same_version_replaced)                       \
    LETTERBOX_DETAIL_SNAPSHOT_CASE(fixtures, "a rolled-back unit leaves no trace", "",             \
                                   snapshot_check_rollback_leaves_no_trace)                        \
    LETTERBOX_DETAIL_SNAPSHOT_CASE(fixtures, "invalid snapshots are refused", "",                  \
                                   snapshot_check_invalid_snapshots_refused)                       \
    LETTERBOX_DETAIL_SNAPSHOT_CASE(fixtures, "drop deletes the snapshots of one stream only", "",  \
                                   snapshot_check_drop_deletes_one_stream)

#define LETTERBOX_DETAIL_SNAPSHOT_CASE(fixtures, name, tags, check)                                \
    LETTERBOX_DETAIL_STORE_CASE(snapshot_store, run_snapshot_store_check, fixtures, name, tags,    \
                                check)
