// SPDX-License-Identifier: BSL-1.0

// attempts_before: the broker-level attempt count a delivery carries.

#include <letterbox/middleware/attempts_before.hpp>

#include <letterbox/field_table.hpp>

#include "layer_fixture.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

namespace unit_middleware_attempts_before {

using namespace unit_middleware_layer_fixture;

TEST_CASE("attempts_before reads letterbox's header, x-death and x-delivery-count",
          "[middleware][attempts]") {
    auto d = make_delivery();
    CHECK(mw::attempts_before(d) == 0);
    d.msg.headers.set(headers::attempts, std::int64_t{2});
    CHECK(mw::attempts_before(d) == 2);
    d.msg.headers.set(headers::x_delivery_count, std::int64_t{5});
    CHECK(mw::attempts_before(d) == 7); // 2 on earlier copies, and 5 returns of this one
    letterbox::field_table other_queue{{"count", std::int64_t{9}},
                                       {"reason", std::string("rejected")},
                                       {"queue", std::string("elsewhere")}};
    letterbox::field_table expired{{"count", std::int64_t{9}},
                                   {"reason", std::string("expired")},
                                   {"queue", std::string("billing")}};
    d.msg.headers.set(headers::x_death, letterbox::field_array{other_queue, expired});
    CHECK(mw::attempts_before(d) == 7); // neither is a rejection from this queue
    SECTION("malformed values count as nothing") {
        d.msg.headers.set(headers::attempts, std::string("many"));
        d.msg.headers.set(headers::x_delivery_count, std::int64_t{-4});
        d.msg.headers.set(headers::x_death, std::string("not an array"));
        CHECK(mw::attempts_before(d) == 0);
    }
}

TEST_CASE("on a quorum queue the returns of this copy add to the attempts of the earlier ones",
          "[middleware][attempts][quorum]") {
    auto d = make_delivery();
    // The first delivery of a message on a quorum queue has no x-delivery-count (basic.get
    // says 0); each return (a crash, a lost connection, a requeue) adds one.
    d.msg.headers.set(headers::x_delivery_count, std::int64_t{0});
    CHECK(mw::attempts_before(d) == 0);
    d.msg.headers.set(headers::x_delivery_count, std::int64_t{1});
    CHECK(mw::attempts_before(d) == 1); // the crashed delivery was attempt 1
    // A republished copy after three failed attempts, returned twice since: attempt 6 next.
    d.msg.headers.set(headers::attempts, std::int64_t{3});
    d.msg.headers.set(headers::x_delivery_count, std::int64_t{2});
    CHECK(mw::attempts_before(d) == 5);
    SECTION("broker-side retry: rejections from this queue, then returns of this copy") {
        d.msg.headers.erase(headers::attempts);
        letterbox::field_table rejected{{"count", std::int64_t{4}},
                                        {"reason", std::string("rejected")},
                                        {"queue", std::string("billing")}};
        d.msg.headers.set(headers::x_death, letterbox::field_array{rejected});
        CHECK(mw::attempts_before(d) == 6);
    }
    SECTION("the sum saturates") {
        d.msg.headers.set(headers::attempts, std::int64_t{0xFFFF'FFFF});
        CHECK(mw::attempts_before(d) == 0xFFFF'FFFFu);
    }
}

} // namespace unit_middleware_attempts_before
