// SPDX-License-Identifier: BSL-1.0
// Compile-only: the store archetypes model their concepts, and every generic component over
// the stores (today: the conformance suites' checks) compiles with them, so it uses nothing
// the concepts do not promise.

#include <letterbox/testing/archetypes/checkpoint_store.hpp>
#include <letterbox/testing/archetypes/event_store.hpp>
#include <letterbox/testing/archetypes/inbox_store.hpp>
#include <letterbox/testing/archetypes/outbox_store.hpp>
#include <letterbox/testing/archetypes/saga_store.hpp>
#include <letterbox/testing/archetypes/snapshot_store.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>
#include <letterbox/testing/checkpoint_store_suite.hpp>
#include <letterbox/testing/event_store_suite.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>
#include <letterbox/testing/saga_store_suite.hpp>
#include <letterbox/testing/snapshot_store_suite.hpp>

#include <cstdint>

namespace lt = letterbox::testing;
using outbox_archetype = lt::outbox_store_archetype;
using inbox_archetype = lt::inbox_store_archetype;
using saga_archetype = lt::saga_store_archetype;
using event_archetype = lt::event_store_archetype;
using snapshot_archetype = lt::snapshot_store_archetype;
using checkpoint_archetype = lt::checkpoint_store_archetype;

static_assert(letterbox::unit_of_work<lt::unit_of_work_archetype>);
static_assert(letterbox::outbox_store<outbox_archetype>);
// The archetype has only what outbox_store requires: the optional batch capability is absent,
// so the suite's batch check compiles down to its WARN branch.
static_assert(!letterbox::outbox_batch_settler<outbox_archetype>);
static_assert(letterbox::inbox_store<inbox_archetype>);
static_assert(letterbox::saga_store<saga_archetype>);
static_assert(letterbox::event_store<event_archetype>);
static_assert(letterbox::snapshot_store<snapshot_archetype>);
static_assert(letterbox::checkpoint_store<checkpoint_archetype>);

template struct letterbox::testing::outbox_store_harness<outbox_archetype>;
template struct letterbox::testing::inbox_store_harness<inbox_archetype>;
template struct letterbox::testing::saga_store_harness<saga_archetype>;
template struct letterbox::testing::event_store_harness<event_archetype>;
template struct letterbox::testing::snapshot_store_harness<snapshot_archetype>;
template struct letterbox::testing::checkpoint_store_harness<checkpoint_archetype>;

// clang-format off
template void lt::detail::outbox_check_add_is_invisible_until_commit<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_rollback_leaves_no_trace<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_on_commit_runs_only_after_commit<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_finished_unit_of_work_is_closed<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_duplicate_message_id_is_refused<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_malformed_payload_is_refused<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_claim_returns_creation_order<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_claim_honours_next_attempt_time<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_lease_excludes_other_owners<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_release_expired_leases<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_per_aggregate_order<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_parked_event_blocks_its_aggregate<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_event_added_behind_unconfirmed_head_waits<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_mark_published_requires_lease_owner<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_mark_published_batch<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_record_failure_counts_and_parks<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_park_and_unpark<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_purge_published_by_retention<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_stats<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_list_filters_and_pages<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);
template void lt::detail::outbox_check_concurrent_claimers<outbox_archetype>(lt::outbox_store_harness<outbox_archetype>&);

template void lt::detail::inbox_check_first_record_wins<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_duplicate_after_commit<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_duplicate_within_unit<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_overlapping_units_one_commits<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_concurrent_threads_one_commits<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_rollback_removes_record<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_finished_unit_of_work_is_closed<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_keys_are_per_consumer<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_nil_id_is_refused<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_purge_by_age<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);
template void lt::detail::inbox_check_random_deliveries_record_once<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&, std::uint64_t);
template void lt::detail::inbox_check_random_deliveries_record_once_seeded<inbox_archetype>(lt::inbox_store_harness<inbox_archetype>&);

template void lt::detail::saga_check_insert_then_find<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_update_writes_next_version<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_stale_update_conflicts<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_taken_keys_conflict<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_one_write_per_unit<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_rollback_leaves_no_trace<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_finished_unit_refuses_writes<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_invalid_instances_refused<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_keys_are_per_saga_type<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_due_timeouts_in_order<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_dropped_timeout_not_due<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_purge_finished<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_overlapping_updates_one_commits<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_concurrent_updates_one_commits<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_concurrent_starts_one_commits<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::saga_check_concurrent_increments_lose_nothing<saga_archetype>(lt::saga_store_harness<saga_archetype>&);
template void lt::detail::event_check_append_then_read<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_stale_append_conflicts<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_expected_versions<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_appends_in_one_unit<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_reads_after_with_limit<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_positions_are_global<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_rollback_leaves_no_trace<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_invalid_appends_refused<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_times_never_decrease<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_overlapping_appends_one_commits<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_positions_follow_commit_order<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_concurrent_appends_one_commits<event_archetype>(lt::event_store_harness<event_archetype>&);
template void lt::detail::event_check_catch_up_reader_misses_nothing<event_archetype>(lt::event_store_harness<event_archetype>&);

template void lt::detail::snapshot_check_save_then_latest<snapshot_archetype>(lt::snapshot_store_harness<snapshot_archetype>&);
template void lt::detail::snapshot_check_latest_under_both_bounds<snapshot_archetype>(lt::snapshot_store_harness<snapshot_archetype>&);
template void lt::detail::snapshot_check_same_version_replaced<snapshot_archetype>(lt::snapshot_store_harness<snapshot_archetype>&);
template void lt::detail::snapshot_check_rollback_leaves_no_trace<snapshot_archetype>(lt::snapshot_store_harness<snapshot_archetype>&);
template void lt::detail::snapshot_check_invalid_snapshots_refused<snapshot_archetype>(lt::snapshot_store_harness<snapshot_archetype>&);
template void lt::detail::snapshot_check_drop_deletes_one_stream<snapshot_archetype>(lt::snapshot_store_harness<snapshot_archetype>&);
template void lt::detail::checkpoint_check_zero_when_none<checkpoint_archetype>(lt::checkpoint_store_harness<checkpoint_archetype>&);
template void lt::detail::checkpoint_check_save_then_read<checkpoint_archetype>(lt::checkpoint_store_harness<checkpoint_archetype>&);
template void lt::detail::checkpoint_check_stale_save_conflicts<checkpoint_archetype>(lt::checkpoint_store_harness<checkpoint_archetype>&);
template void lt::detail::checkpoint_check_back_to_zero<checkpoint_archetype>(lt::checkpoint_store_harness<checkpoint_archetype>&);
template void lt::detail::checkpoint_check_rollback_leaves_no_trace<checkpoint_archetype>(lt::checkpoint_store_harness<checkpoint_archetype>&);
template void lt::detail::checkpoint_check_invalid_saves_refused<checkpoint_archetype>(lt::checkpoint_store_harness<checkpoint_archetype>&);
template void lt::detail::checkpoint_check_overlapping_saves_one_commits<checkpoint_archetype>(lt::checkpoint_store_harness<checkpoint_archetype>&);
template void lt::detail::checkpoint_check_concurrent_saves_one_commits<checkpoint_archetype>(lt::checkpoint_store_harness<checkpoint_archetype>&);
// clang-format on
