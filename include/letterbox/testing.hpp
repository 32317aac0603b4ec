// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The `letterbox::testing` component: conformance suites for the `outbox_store` and
/// `inbox_store` concepts, the archetypes, and the seed helpers of randomised tests. Needs
/// Catch2 2.13 and RapidCheck; link `letterbox::testing`.
#include <letterbox/testing/archetypes/clock.hpp>
#include <letterbox/testing/archetypes/handler.hpp>
#include <letterbox/testing/archetypes/inbox_store.hpp>
#include <letterbox/testing/archetypes/outbox_store.hpp>
#include <letterbox/testing/archetypes/retry_policy.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>
#include <letterbox/testing/seed.hpp>
