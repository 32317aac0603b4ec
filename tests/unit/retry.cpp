// SPDX-License-Identifier: BSL-1.0

#include <letterbox/retry.hpp>

#include <letterbox/backoff/fixed.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/retry/classifier.hpp>
#include <letterbox/retry/exponential.hpp>
#include <letterbox/retry/fixed.hpp>
#include <letterbox/retry/immediate.hpp>
#include <letterbox/retry/jitter.hpp>
#include <letterbox/retry/none.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <type_traits>

namespace unit_retry {

// The old name of the policies' namespace, and its old headers, still name the same types.
static_assert(std::is_same_v<letterbox::retry::fixed, letterbox::backoff::fixed>);
static_assert(std::is_same_v<letterbox::retry::exponential, letterbox::backoff::exponential>);
static_assert(std::is_same_v<letterbox::retry::immediate, letterbox::backoff::immediate>);
static_assert(std::is_same_v<letterbox::retry::none, letterbox::backoff::none>);
static_assert(std::is_same_v<letterbox::retry::classifier, letterbox::backoff::classifier>);
static_assert(std::is_same_v<letterbox::retry::jitter, letterbox::backoff::jitter>);

namespace uses_the_middleware {
using namespace letterbox::middleware;
// The reason for the rename: under this directive `retry` is the layer's function, and the
// policies are still reachable by their new name.
static_assert(std::is_same_v<decltype(retry(letterbox::backoff::immediate(2))),
                             retry_layer<letterbox::backoff::immediate>>);
} // namespace uses_the_middleware

TEST_CASE("the old namespace name makes the same policy", "[retry][backoff]") {
    using namespace std::chrono_literals;
    const auto old_name = letterbox::retry::fixed(1s, 3);
    const letterbox::backoff::fixed& same = old_name;
    CHECK(same.max_attempts() == 3);
    CHECK(same.horizon() == std::chrono::milliseconds{2000});
}

} // namespace unit_retry
