// SPDX-License-Identifier: BSL-1.0

// compose and compose_in_order: the layers in the documented order or the given one, and the
// dedup-window check.

#include <letterbox/middleware/compose.hpp>

#include <letterbox/backoff/exponential.hpp>
#include <letterbox/backoff/fixed.hpp>
#include <letterbox/backoff/immediate.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/virtual_clock.hpp>

#include "layer_fixture.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

namespace unit_middleware_compose {

using namespace unit_middleware_layer_fixture;
namespace backoff = letterbox::backoff;

TEST_CASE("compose puts the layers in the documented order whatever the argument order",
          "[middleware][compose]") {
    letterbox::virtual_clock clock;
    auto dl = mw::dead_letter({}, clock);
    auto rd = mw::redelivery(backoff::fixed(10s, 3), billing_topology(), clock);
    auto rt = mw::retry(backoff::immediate(2));
    int calls_a = 0, calls_b = 0;
    auto a = mw::compose(flaky{100, &calls_a}, dl, rd, rt);
    auto b = mw::compose(flaky{100, &calls_b}, rt, dl, rd);
    static_assert(std::is_same_v<decltype(a), decltype(b)>);
    auto d = make_delivery();
    // First delivery: two in-process runs, then a redelivery.
    auto ra = a(handling{d});
    CHECK(ra.what() == kind::forward);
    CHECK(ra.why() == disposition::purpose::redeliver);
    CHECK(calls_a == 2);
    // Third delivery: the redelivery gives up, the dead-letter layer takes it.
    d.msg.headers.set(headers::attempts, std::int64_t{2});
    auto rb = b(handling{d});
    REQUIRE(rb.what() == kind::forward);
    CHECK(rb.why() == disposition::purpose::dead_letter);
    CHECK(rb.forwarded()->headers.get<std::string>(headers::death_reason) == "retries-exhausted");
    CHECK(attempts_header(*rb.forwarded()) == 3);
}

TEST_CASE("compose sends a permanent failure straight to the dead-letter path",
          "[middleware][compose]") {
    letterbox::virtual_clock clock;
    auto h = mw::compose(always_throws_malformed{}, mw::dead_letter({}, clock),
                         mw::redelivery(backoff::fixed(10s, 5), billing_topology(), clock),
                         mw::retry(backoff::immediate(5)));
    const auto d = make_delivery();
    auto r = h(handling{d});
    REQUIRE(r.what() == kind::forward);
    CHECK(r.why() == disposition::purpose::dead_letter);
    CHECK(r.forwarded()->headers.get<std::string>(headers::death_reason) == "permanent-failure");
    CHECK(attempts_header(*r.forwarded()) == 1);
}

namespace {
// A handler that declares an inbox retention, as `idempotent(...).with_retention` does.
struct remembering_handler {
    std::chrono::milliseconds kept;
    void operator()(const letterbox::message&) const {}
    std::optional<std::chrono::milliseconds> retention() const { return kept; }
};
} // namespace

TEST_CASE("compose refuses an inbox retention shorter than the redelivery horizon, naming both",
          "[middleware][compose][dedup_window]") {
    letterbox::virtual_clock clock;
    // Broker: 1m + 10m + 1h; in-process: 2 x 1s per delivery, 4 deliveries.
    auto rd = mw::redelivery(backoff::exponential(1min, 10.0, 1h, 4), billing_topology(), clock);
    auto rt = mw::retry(backoff::fixed(1s, 3));
    REQUIRE(mw::redelivery_horizon(rd, rt) == 1min + 10min + 1h + 4 * 2s);
    try {
        (void)mw::compose(remembering_handler{30min}, rd, rt);
        FAIL("a 30 minute retention was accepted");
    } catch (const letterbox::error& e) {
        CHECK(e.code() == errc::dedup_window_too_short);
        const std::string text = e.what();
        CHECK_THAT(text, Catch::Contains("30m"));
        CHECK_THAT(text, Catch::Contains("1h 11m"));
    }
    CHECK_THROWS_AS(mw::compose_in_order(remembering_handler{30min}, rd, rt), letterbox::error);
    CHECK_NOTHROW(mw::compose(remembering_handler{2h}, rd, rt));
    CHECK_NOTHROW(mw::compose(remembering_handler{1s})); // no redelivery, nothing to check
}

TEST_CASE("compose checks the retention declared on an idempotent handler",
          "[middleware][compose][dedup_window]") {
    letterbox::virtual_clock clock;
    letterbox::in_memory_inbox_store inbox;
    auto h = letterbox::idempotent(
        [](const letterbox::message&, letterbox::in_memory_unit_of_work&) {}, inbox,
        [] { return letterbox::in_memory_unit_of_work{}; }, "billing", clock);
    CHECK(h.retention() == 7 * 24h); // the store's own, unless declared
    auto rd = mw::redelivery(backoff::fixed(1h, 25), billing_topology(), clock); // 24h horizon
    CHECK_THROWS_WITH(mw::compose(h.with_retention(12h), mw::dead_letter({}, clock), rd),
                      Catch::Contains("inbox retention 12h") && Catch::Contains("1d"));
    CHECK_NOTHROW(mw::compose(h.with_retention(7 * 24h), mw::dead_letter({}, clock), rd));
}

TEST_CASE("compose_in_order keeps the given order", "[middleware][compose]") {
    letterbox::virtual_clock clock;
    int calls = 0;
    // Dead-letter inside retry: each in-process run dead-letters at once, so retry never sees
    // a failure: the order matters, and compose_in_order honours it.
    auto h = mw::compose_in_order(flaky{100, &calls}, mw::retry(backoff::immediate(3)),
                                  mw::dead_letter({}, clock));
    const auto d = make_delivery();
    auto r = h(handling{d});
    CHECK(r.what() == kind::forward);
    CHECK(calls == 1);
}

} // namespace unit_middleware_compose
