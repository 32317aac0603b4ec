// SPDX-License-Identifier: BSL-1.0
// What the retry tests share: readable retry_decisions in Catch2's failure messages, and the
// error code a constructor threw.
#pragma once

#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <system_error>

namespace Catch {
template <>
struct StringMaker<letterbox::retry_decision> {
    static std::string convert(const letterbox::retry_decision& d) {
        if (d.what == letterbox::retry_decision::action::retry) {
            return "retry after " + std::to_string(d.delay.count()) + " ms";
        }
        return d.permanent ? "give up (permanent)" : "give up (exhausted)";
    }
};
} // namespace Catch

namespace retry_test {

/// The code of the `letterbox::error` that `f()` throws, or an empty code if it throws none.
template <class F>
std::error_code error_thrown_by(F f) {
    try {
        f();
    } catch (const letterbox::error& e) {
        return e.code();
    }
    return {};
}

} // namespace retry_test
