// SPDX-License-Identifier: BSL-1.0
#include <letterbox/detail/run_inner.hpp>

#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
#include <system_error>

namespace unit_detail_run_inner {

namespace {

using letterbox::message;
using letterbox::middleware::disposition;
using letterbox::middleware::handling;

struct plain_void {
    void operator()(const message&) {}
};
struct plain_code {
    std::error_code operator()(const message&) { return letterbox::errc::handler_failed; }
};
struct deciding {
    disposition operator()(const handling&) { return disposition::ack(); }
};
struct decides_something_else {
    int operator()(const handling&) { return 0; }
};
struct decides_by_const_call {
    disposition operator()(const handling&) const { return disposition::ack(); }
};
struct takes_mutable_handling {
    disposition operator()(handling&) { return disposition::ack(); }
};
struct both {
    void operator()(const message&) { throw std::logic_error("run as a plain handler"); }
    disposition operator()(const handling&) { return disposition::ack(); }
};
struct throws {
    void operator()(const message&) { throw std::invalid_argument("bad payload"); }
};

/// `decides_handling` is `delivery_handler` spelled without the concepts.
template <class H>
constexpr bool agree = letterbox::detail::decides_handling<H> == letterbox::delivery_handler<H>;

} // namespace

TEST_CASE("run_inner tells a delivery handler the way the delivery_handler concept does",
          "[detail][run_inner]") {
    STATIC_REQUIRE(agree<plain_void>);
    STATIC_REQUIRE(agree<plain_code>);
    STATIC_REQUIRE(agree<deciding>);
    STATIC_REQUIRE(agree<decides_something_else>);
    STATIC_REQUIRE(agree<decides_by_const_call>);
    STATIC_REQUIRE(agree<takes_mutable_handling>);
    STATIC_REQUIRE(agree<both>);
    STATIC_REQUIRE(agree<int>);
    STATIC_REQUIRE(letterbox::detail::decides_handling<deciding>);
    STATIC_REQUIRE_FALSE(letterbox::detail::decides_handling<plain_void>);
}

TEST_CASE("run_inner turns a plain handler's outcome into a disposition", "[detail][run_inner]") {
    const letterbox::delivery d{};
    const handling x{d};
    plain_void ok;
    CHECK(letterbox::detail::run_inner(ok, x).what() == disposition::kind::ack);
    plain_code failing;
    const auto r = letterbox::detail::run_inner(failing, x);
    REQUIRE(r.what() == disposition::kind::fail);
    CHECK(r.failure()->error == letterbox::errc::handler_failed);
    throws thrower;
    const auto t = letterbox::detail::run_inner(thrower, x);
    REQUIRE(t.what() == disposition::kind::fail);
    CHECK(t.failure()->exception_type == "std::invalid_argument");
    CHECK(t.failure()->exception_message == "bad payload");
}

TEST_CASE("run_inner runs a delivery handler as it is, and a handler of both shapes as one",
          "[detail][run_inner]") {
    const letterbox::delivery d{};
    const handling x{d};
    deciding h;
    CHECK(letterbox::detail::run_inner(h, x).what() == disposition::kind::ack);
    both b;
    CHECK(letterbox::detail::run_inner(b, x).what() == disposition::kind::ack);
    // The middleware still spell it from their own namespace.
    CHECK(letterbox::middleware::detail::run_inner(h, x).what() == disposition::kind::ack);
}

} // namespace unit_detail_run_inner
