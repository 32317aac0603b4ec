// SPDX-License-Identifier: BSL-1.0
// A pipeline around a handler of the wrong parameter type.
#include <letterbox/backoff/fixed.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/retry.hpp>

#include <chrono>
#include <string>

// expect: letterbox: the handler must be callable as `h(const letterbox::message&)`

void build() {
    auto pipeline = letterbox::middleware::compose(
        [](const std::string&) {},
        letterbox::middleware::retry(letterbox::backoff::fixed(std::chrono::milliseconds{10}, 3)));
    (void)pipeline;
}
