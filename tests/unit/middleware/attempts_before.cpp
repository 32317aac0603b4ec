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
    CHECK(mw::attempts_before(d) == 5);
    letterbox::field_table other_queue{{"count", std::int64_t{9}},
                                       {"reason", std::string("rejected")},
                                       {"queue", std::string("elsewhere")}};
    letterbox::field_table expired{{"count", std::int64_t{9}},
                                   {"reason", std::string("expired")},
                                   {"queue", std::string("billing")}};
    d.msg.headers.set(headers::x_death, letterbox::field_array{other_queue, expired});
    CHECK(mw::attempts_before(d) == 5); // neither is a rejection from this queue
    SECTION("malformed values count as nothing") {
        d.msg.headers.set(headers::attempts, std::string("many"));
        d.msg.headers.set(headers::x_delivery_count, std::int64_t{-4});
        d.msg.headers.set(headers::x_death, std::string("not an array"));
        CHECK(mw::attempts_before(d) == 0);
    }
}

} // namespace unit_middleware_attempts_before
