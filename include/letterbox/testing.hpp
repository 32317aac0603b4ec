// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The `letterbox::testing` component: conformance suites for the `transport`,
/// `outbox_store` and `inbox_store` concepts, the archetypes, and the seed helpers of
/// randomised tests. Needs Catch2 2.13 and RapidCheck; link `letterbox::testing`.
#include <letterbox/testing/archetypes.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>
#include <letterbox/testing/seed.hpp>
#include <letterbox/testing/transport_features.hpp>
#include <letterbox/testing/transport_suite.hpp>
