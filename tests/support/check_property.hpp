// SPDX-License-Identifier: BSL-1.0
#pragma once

// Runs a RapidCheck property seeded from LETTERBOX_SEED and reports through Catch2: the
// property tests' shared way to call RapidCheck (RC_PARAMS still overrides seed= and
// max_success=).

#include <letterbox/testing/seed.hpp>

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <cstdlib>
#include <sstream>
#include <string_view>
#include <utility>

namespace test_support {

/// RapidCheck's parameters: the process seed and `max_success` cases, unless RC_PARAMS says.
inline rc::detail::TestParams property_params(int max_success) {
    auto params = rc::detail::configuration().testParams;
    const char* env = std::getenv("RC_PARAMS");
    const auto mentions = [env](std::string_view key) {
        return env != nullptr && std::string_view(env).find(key) != std::string_view::npos;
    };
    if (!mentions("seed="))
        params.seed = letterbox::testing::test_seed();
    if (!mentions("max_success="))
        params.maxSuccess = max_success;
    return params;
}

/// Runs one RapidCheck property with those parameters; REQUIREs that it held.
template <class Testable>
void check_property(const char* id, int max_success, Testable&& testable) {
    const auto params = property_params(max_success);
    INFO("LETTERBOX_SEED=" << letterbox::testing::test_seed() << " (RapidCheck seed " << params.seed
                           << ", " << params.maxSuccess << " cases)");
    rc::detail::TestMetadata metadata;
    metadata.id = id;
    metadata.description = id;
    const auto result =
        rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
    std::ostringstream report;
    rc::detail::printResultMessage(result, report);
    INFO(report.str());
    REQUIRE(result.template is<rc::detail::SuccessResult>());
}

} // namespace test_support
