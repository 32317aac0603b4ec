// SPDX-License-Identifier: BSL-1.0
#pragma once
// Reads one sample out of a Prometheus text exposition, for the tests of letterbox::ops.

#include <catch2/catch.hpp>

#include <string>

namespace test_support {

/// The value of the sample whose series (name and labels, as rendered) is `series` in `text`;
/// fails the test when there is none.
inline double prometheus_sample(const std::string& text, const std::string& series) {
    const auto at = text.find("\n" + series + " ");
    REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + series.size() + 2));
}

} // namespace test_support
