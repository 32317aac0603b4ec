// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The `letterbox::testing` component: archetypes and the seed helpers of randomised tests.
/// Needs Catch2 2.13 and RapidCheck; link `letterbox::testing`.
#include <letterbox/testing/archetypes/clock.hpp>
#include <letterbox/testing/archetypes/handler.hpp>
#include <letterbox/testing/archetypes/retry_policy.hpp>
#include <letterbox/testing/seed.hpp>
