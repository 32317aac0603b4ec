// SPDX-License-Identifier: BSL-1.0
// Near misses: each clause of handler is necessary. Every type below is almost a handler, and
// the concept must reject it.

#include <letterbox/concepts/handler.hpp>

#include <catch2/catch.hpp>

#include <boost/system/error_code.hpp>

#include <system_error>

namespace unit_concepts_handler {

namespace {

using letterbox::message;

struct returns_void {
    void operator()(const message&) {}
};
struct returns_error_code {
    std::error_code operator()(const message&) { return {}; }
};
struct move_only {
    move_only() = default;
    move_only(move_only&&) = default;
    void operator()(const message&) {}
};
struct takes_mutable_message {
    void operator()(message&) {}
};
struct takes_nothing {
    void operator()() {}
};
struct returns_bool {
    bool operator()(const message&) { return true; }
};
struct returns_boost_error_code {
    boost::system::error_code operator()(const message&) { return {}; }
};
struct callable_only_as_rvalue {
    void operator()(const message&) && {}
};
struct not_callable {};

} // namespace

TEST_CASE("a callable taking a const message and returning void is a handler",
          "[concepts][handler]") {
    STATIC_REQUIRE(letterbox::handler<returns_void>);
    STATIC_REQUIRE(letterbox::handler<void (*)(const message&)>);
}

TEST_CASE("a callable returning std::error_code is a handler", "[concepts][handler]") {
    STATIC_REQUIRE(letterbox::handler<returns_error_code>);
}

TEST_CASE("a move-only callable is a handler", "[concepts][handler]") {
    STATIC_REQUIRE(letterbox::handler<move_only>);
}

TEST_CASE("a callable that takes a mutable message is not a handler", "[concepts][handler]") {
    STATIC_REQUIRE(!letterbox::handler<takes_mutable_message>);
}

TEST_CASE("a callable that takes no message is not a handler", "[concepts][handler]") {
    STATIC_REQUIRE(!letterbox::handler<takes_nothing>);
}

TEST_CASE("a callable returning bool is not a handler", "[concepts][handler]") {
    STATIC_REQUIRE(!letterbox::handler<returns_bool>);
}

TEST_CASE("a callable returning boost::system::error_code is not a handler",
          "[concepts][handler]") {
    STATIC_REQUIRE(!letterbox::handler<returns_boost_error_code>);
}

TEST_CASE("a callable that can be called only as an rvalue is not a handler",
          "[concepts][handler]") {
    STATIC_REQUIRE(!letterbox::handler<callable_only_as_rvalue>);
}

TEST_CASE("a type without a call operator is not a handler", "[concepts][handler]") {
    STATIC_REQUIRE(!letterbox::handler<not_callable>);
}

} // namespace unit_concepts_handler
