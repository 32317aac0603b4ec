// SPDX-License-Identifier: BSL-1.0

#include <letterbox/middleware/innermost.hpp>

#include <letterbox/backoff/immediate.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/virtual_clock.hpp>

#include <catch2/catch.hpp>

#include <type_traits>

namespace unit_middleware_innermost {

namespace {
struct counted {
    int id = 0;
    void operator()(const letterbox::message&) const {}
};
} // namespace

TEST_CASE("innermost finds the handler at the centre of the layers", "[middleware][innermost]") {
    letterbox::virtual_clock clock;
    const counted alone{1};
    CHECK(&letterbox::middleware::innermost(alone) == &alone);

    const auto pipeline = letterbox::middleware::compose(
        counted{2}, letterbox::middleware::retry(letterbox::backoff::immediate(2)),
        letterbox::middleware::dead_letter({}, clock));
    const auto& centre = letterbox::middleware::innermost(pipeline);
    static_assert(std::is_same_v<std::decay_t<decltype(centre)>, counted>);
    CHECK(centre.id == 2);
}

} // namespace unit_middleware_innermost
