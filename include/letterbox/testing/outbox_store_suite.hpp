// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/detail/store_harness.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What an `outbox_store` model can do beyond the concept, declared by its suite fixture.
struct outbox_store_features {
    /// The suite may call the store and open a second unit of work on a thread that holds an
    /// open unit of work. Set it to false when an open unit of work holds a lock that those
    /// calls would wait for (a SQLite `BEGIN IMMEDIATE` on the connection the store uses);
    /// the checks that need it then warn and skip that part.
    bool overlapping_units_of_work = true;
};

/// What one check of the suite is given: the store under test (`Store& store`), a way to begin
/// a unit of work for it (`begin()`) and the model's features (`features`). An aggregate:
/// `{store, begin, features}`.
template <outbox_store Store>
struct outbox_store_harness : detail::store_harness<Store, outbox_store_features> {};

} // namespace letterbox::testing

#include <letterbox/testing/detail/outbox_store_checks.hpp>
#include <letterbox/testing/detail/store_suite_case.hpp>

/// Expands the `outbox_store` conformance suite: one Catch2 `TEMPLATE_LIST_TEST_CASE` per
/// check, each run once per fixture in the `std::tuple` named by `fixtures`.
///
/// A fixture is a type with:
/// - `static auto make()`, returning (by value) a context `ctx` that owns an **empty** store,
///   with `ctx.store()` returning `Store&` (a model of `outbox_store`) and `ctx.begin()`
///   returning a new `Store::unit_of_work_type`; `begin()` may be called from several threads;
/// - optionally `static constexpr letterbox::testing::outbox_store_features features{...};`.
///
/// Each check gets a fresh context. Test names are "outbox_store conformance: <check> -
/// <fixtures> - <index>", so give the tuple a name specific to the model
/// (`sqlite_outbox_fixtures`), which keeps names unique in a test executable. Tags:
/// `[conformance][outbox_store]`, plus `[threads]` on the checks that start threads.
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
///     using my_outbox_fixtures = std::tuple<my_fixture>;
///     LETTERBOX_OUTBOX_STORE_SUITE(my_outbox_fixtures)
#define LETTERBOX_OUTBOX_STORE_SUITE(fixtures)                                                     \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "add is invisible until the unit of work commits", "",  \
                                 outbox_check_add_is_invisible_until_commit)                       \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "a rolled-back add leaves no trace", "",                \
                                 outbox_check_rollback_leaves_no_trace)                            \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "on_commit callbacks run only after a commit", "",      \
                                 outbox_check_on_commit_runs_only_after_commit)                    \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "a finished unit of work refuses further use", "",      \
                                 outbox_check_finished_unit_of_work_is_closed)                     \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "a duplicate message id is refused", "",                \
                                 outbox_check_duplicate_message_id_is_refused)                     \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "a payload invalid for its content type is refused",    \
                                 "", outbox_check_malformed_payload_is_refused)                    \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "claim returns rows in creation order", "",             \
                                 outbox_check_claim_returns_creation_order)                        \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "claim waits for the next attempt time", "",            \
                                 outbox_check_claim_honours_next_attempt_time)                     \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "a leased row goes to no other owner before expiry",    \
                                 "", outbox_check_lease_excludes_other_owners)                     \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "release_expired_leases frees only expired leases", "", \
                                 outbox_check_release_expired_leases)                              \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "an aggregate's events are claimed in order", "",       \
                                 outbox_check_per_aggregate_order)                                 \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "a parked event blocks the rest of its aggregate", "",  \
                                 outbox_check_parked_event_blocks_its_aggregate)                   \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures,                                                         \
                                 "an event added behind an unconfirmed head waits for it", "",     \
                                 outbox_check_event_added_behind_unconfirmed_head_waits)           \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "only the lease owner can mark a row published", "",    \
                                 outbox_check_mark_published_requires_lease_owner)                 \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures,                                                         \
                                 "mark_published of a batch settles each row as one call would",   \
                                 "", outbox_check_mark_published_batch)                            \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "record_failure counts attempts and parks at the max",  \
                                 "", outbox_check_record_failure_counts_and_parks)                 \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "park and unpark move a row out of and back into line", \
                                 "", outbox_check_park_and_unpark)                                 \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "purge_published deletes only old published rows", "",  \
                                 outbox_check_purge_published_by_retention)                        \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "stats count rows by status and report the lag", "",    \
                                 outbox_check_stats)                                               \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "list filters by status and pages by sequence", "",     \
                                 outbox_check_list_filters_and_pages)                              \
    LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, "concurrent claimers never hold the same row at once",  \
                                 "[threads]", outbox_check_concurrent_claimers)

#define LETTERBOX_DETAIL_OUTBOX_CASE(fixtures, name, tags, check)                                  \
    LETTERBOX_DETAIL_STORE_CASE(outbox_store, run_outbox_store_check, fixtures, name, tags, check)
