// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The `letterbox::testing` component: conformance suites for the `transport`,
/// `outbox_store`, `inbox_store`, `saga_store`, `event_store`, `snapshot_store` and
/// `checkpoint_store` concepts, the archetypes, the seed helpers of randomised tests, and the
/// history recorder with its invariant checkers.
/// Needs Catch2 2.13 and RapidCheck; link `letterbox::testing`.
#include <letterbox/testing/archetypes.hpp>
#include <letterbox/testing/check_aggregate_order.hpp>
#include <letterbox/testing/check_all.hpp>
#include <letterbox/testing/check_bounded_redelivery.hpp>
#include <letterbox/testing/check_convergence.hpp>
#include <letterbox/testing/check_determinism.hpp>
#include <letterbox/testing/check_no_duplicate_effect.hpp>
#include <letterbox/testing/check_no_loss.hpp>
#include <letterbox/testing/check_no_phantom.hpp>
#include <letterbox/testing/check_pipeline.hpp>
#include <letterbox/testing/check_poison_isolation.hpp>
#include <letterbox/testing/check_saga_history.hpp>
#include <letterbox/testing/check_saga_simulation.hpp>
#include <letterbox/testing/checkpoint_store_suite.hpp>
#include <letterbox/testing/event_store_suite.hpp>
#include <letterbox/testing/fault_profile.hpp>
#include <letterbox/testing/fault_schedule.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/history_event.hpp>
#include <letterbox/testing/history_expectations.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/invariant.hpp>
#include <letterbox/testing/invariant_violation.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>
#include <letterbox/testing/pipeline_application.hpp>
#include <letterbox/testing/pipeline_defect.hpp>
#include <letterbox/testing/pipeline_options.hpp>
#include <letterbox/testing/pipeline_report.hpp>
#include <letterbox/testing/pipeline_result.hpp>
#include <letterbox/testing/pipeline_topology.hpp>
#include <letterbox/testing/rapidcheck.hpp>
#include <letterbox/testing/run_pipeline.hpp>
#include <letterbox/testing/run_saga_simulation.hpp>
#include <letterbox/testing/saga_defect.hpp>
#include <letterbox/testing/saga_fault_profile.hpp>
#include <letterbox/testing/saga_history_event.hpp>
#include <letterbox/testing/saga_invariant.hpp>
#include <letterbox/testing/saga_simulation_options.hpp>
#include <letterbox/testing/saga_simulation_report.hpp>
#include <letterbox/testing/saga_simulation_result.hpp>
#include <letterbox/testing/saga_store_suite.hpp>
#include <letterbox/testing/saga_violation.hpp>
#include <letterbox/testing/seed.hpp>
#include <letterbox/testing/simulation.hpp>
#include <letterbox/testing/snapshot_store_suite.hpp>
#include <letterbox/testing/temp_directory.hpp>
#include <letterbox/testing/transport_features.hpp>
#include <letterbox/testing/transport_suite.hpp>
