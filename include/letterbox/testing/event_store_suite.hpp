// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/event_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/detail/store_harness.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What an `event_store` model can do beyond the concept, declared by its suite fixture.
struct event_store_features {
    /// The suite may call the store and open a second unit of work on a thread that holds an
    /// open unit of work. Set it to false when an open unit of work holds a lock that those
    /// calls would wait for (a SQLite `BEGIN IMMEDIATE`); the checks that need it then warn and
    /// skip that part. Concurrent units on different threads are always checked.
    bool overlapping_units_of_work = true;
};

/// What one check of the suite is given: the store under test (`Store& store`), a way to begin
/// a unit of work for it (`begin()`) and the model's features (`features`). An aggregate:
/// `{store, begin, features}`.
template <event_store Store>
struct event_store_harness : detail::store_harness<Store, event_store_features> {};

} // namespace letterbox::testing

#include <letterbox/testing/detail/event_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_case.hpp>

/// Expands the `event_store` conformance suite: one Catch2 `TEMPLATE_LIST_TEST_CASE` per check,
/// each run once per fixture in the `std::tuple` named by `fixtures`.
///
/// A fixture is a type with:
/// - `static auto make()`, returning (by value) a context `ctx` that owns an **empty** store,
///   with `ctx.store()` returning `Store&` (a model of `event_store`) and `ctx.begin()`
///   returning a new `Store::unit_of_work_type`; `begin()` may be called from several threads;
/// - optionally `static constexpr letterbox::testing::event_store_features features{...};`.
///
/// Each check gets a fresh context. Test names are "event_store conformance: <check> -
/// <fixtures> - <index>", so give the tuple a name specific to the model
/// (`sqlite_event_fixtures`). Tags: `[conformance][event_store]`, plus `[threads]` on the
/// checks that start threads: two writers racing at one expected version, and a catch-up
/// reader that follows concurrent appenders and must see every position once, in order.
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
///     using my_event_fixtures = std::tuple<my_fixture>;
///     LETTERBOX_EVENT_STORE_SUITE(my_event_fixtures)
#define LETTERBOX_EVENT_STORE_SUITE(fixtures)                                                      \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "appended events are read back in order", "",            \
                                event_check_append_then_read)                                      \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "an append at a stale version writes nothing", "",       \
                                event_check_stale_append_conflicts)                                \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "each expected version admits what it names", "",        \
                                event_check_expected_versions)                                     \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "appends in one unit count each other", "",              \
                                event_check_appends_in_one_unit)                                   \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "reads start after a version or a position", "",         \
                                event_check_reads_after_with_limit)                                \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "positions are global and without gaps", "",             \
                                event_check_positions_are_global)                                  \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "a rolled-back unit leaves no trace", "",                \
                                event_check_rollback_leaves_no_trace)                              \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "invalid appends are refused", "",                       \
                                event_check_invalid_appends_refused)                               \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "recorded times never decrease", "",                     \
                                event_check_times_never_decrease)                                  \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures,                                                          \
                                "of two overlapping units appending at one version one commits",   \
                                "", event_check_overlapping_appends_one_commits)                   \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "positions follow commit order, not append order", "",   \
                                event_check_positions_follow_commit_order)                         \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "of two threads appending at one version one commits",   \
                                "[threads]", event_check_concurrent_appends_one_commits)           \
    LETTERBOX_DETAIL_EVENT_CASE(fixtures, "a catch-up reader sees every position once, in order",  \
                                "[threads]", event_check_catch_up_reader_misses_nothing)

#define LETTERBOX_DETAIL_EVENT_CASE(fixtures, name, tags, check)                                   \
    LETTERBOX_DETAIL_STORE_CASE(event_store, run_event_store_check, fixtures, name, tags, check)
