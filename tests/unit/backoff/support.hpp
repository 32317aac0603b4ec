// SPDX-License-Identifier: BSL-1.0
// What the retry tests share: readable retry_decisions in Catch2's failure messages, the names
// and the failed attempt the policy tests use (`using namespace backoff_test;`), and the error
// code a constructor threw.
#pragma once

#include <letterbox/backoff/classifier.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
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

namespace backoff_test {

namespace backoff = letterbox::backoff;
using letterbox::attempt_failure;
using letterbox::errc;
using letterbox::retry_decision;
using std::chrono::milliseconds;

/// Attempt `attempt` of message `id` failed with the error code `ec` (transient by default) and
/// no exception.
inline attempt_failure failure(std::uint32_t attempt, std::error_code ec = errc::timed_out,
                               std::string_view id = "m-1") {
    attempt_failure f;
    f.attempt = attempt;
    f.error = ec;
    f.message_id = id;
    return f;
}

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

} // namespace backoff_test
