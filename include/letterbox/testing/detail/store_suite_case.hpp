// SPDX-License-Identifier: BSL-1.0
#pragma once

// The test case that outbox_store_suite.hpp and inbox_store_suite.hpp expand once per check.
// Private to the store suites.

#include <catch2/catch.hpp>

/// One `TEMPLATE_LIST_TEST_CASE` named "<kind> conformance: <name>", tagged
/// `[conformance][<kind>]` and `tags`, that runs `check` through `runner` (both in
/// `letterbox::testing::detail`) once per fixture of `fixtures`.
#define LETTERBOX_DETAIL_STORE_CASE(kind, runner, fixtures, name, tags, check)                     \
    TEMPLATE_LIST_TEST_CASE(#kind " conformance: " name, "[conformance][" #kind "]" tags,          \
                            fixtures) {                                                            \
        ::letterbox::testing::detail::runner<TestType>(&::letterbox::testing::detail::check);      \
    }
