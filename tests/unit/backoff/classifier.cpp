// SPDX-License-Identifier: BSL-1.0

#include <letterbox/backoff/classifier.hpp>

#include "support.hpp"

#include <letterbox/error.hpp>

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>

namespace unit_backoff_classifier {

namespace {

using letterbox::attempt_failure;
using letterbox::errc;
using letterbox::backoff::classifier;

attempt_failure returned(std::error_code ec) {
    attempt_failure f;
    f.error = ec;
    return f;
}

template <class E>
attempt_failure thrown(E e) {
    attempt_failure f;
    f.exception = std::make_exception_ptr(std::move(e));
    return f;
}

// What the middleware reports when a handler throws: the exception, and handler_failed.
template <class E>
attempt_failure thrown_by_a_handler(E e) {
    attempt_failure f = thrown(std::move(e));
    f.error = errc::handler_failed;
    return f;
}

attempt_failure json_parse_error() {
    attempt_failure f;
    try {
        [[maybe_unused]] const auto j = nlohmann::json::parse("{\"unterminated\":");
    } catch (...) {
        f.exception = std::current_exception();
    }
    return f;
}

attempt_failure json_type_error() {
    attempt_failure f;
    try {
        const nlohmann::json number = 7;
        (void)number.get<std::string>();
    } catch (...) {
        f.exception = std::current_exception();
    }
    return f;
}

} // namespace

TEST_CASE("a default classifier finds ordinary failures transient", "[retry][classifier]") {
    const classifier c;
    CHECK_FALSE(c.is_permanent(attempt_failure{}));
    CHECK_FALSE(c.is_permanent(returned(errc::timed_out)));
    CHECK_FALSE(c.is_permanent(returned(std::make_error_code(std::errc::connection_refused))));
    CHECK_FALSE(c.is_permanent(thrown(std::runtime_error("socket closed"))));
    CHECK_FALSE(c.is_permanent(thrown(std::invalid_argument("bad"))));
    CHECK_FALSE(c.is_permanent(thrown(42)));
    CHECK_FALSE(c.is_permanent(thrown_by_a_handler(letterbox::error(errc::lease_lost))));
}

TEST_CASE("payload errors are permanent by default, returned or thrown", "[retry][classifier]") {
    const classifier c;
    for (const auto e :
         {errc::payload_malformed, errc::payload_type_mismatch, errc::payload_unencodable}) {
        CAPTURE(std::error_code(e).message());
        CHECK(c.is_permanent(returned(e)));
        CHECK(c.is_permanent(thrown(letterbox::error(e, "decoding order.placed"))));
        CHECK(c.is_permanent(thrown(std::system_error(make_error_code(e)))));
        CHECK(c.is_permanent(thrown_by_a_handler(letterbox::error(e))));
    }
}

TEST_CASE("a nlohmann::json parse or type error is permanent by default", "[retry][classifier]") {
    const classifier c;
    const auto parse = json_parse_error();
    const auto type = json_type_error();
    REQUIRE(parse.exception);
    REQUIRE(type.exception);
    CHECK(c.is_permanent(parse));
    CHECK(c.is_permanent(type));
}

TEST_CASE("store errors are transient, returned or thrown, whatever the rules say",
          "[retry][classifier]") {
    const auto c = classifier{}
                       .permanent(errc::store_busy)
                       .permanent<std::system_error>()
                       .permanent<std::exception>()
                       .permanent(std::error_condition(static_cast<int>(errc::store_full),
                                                       letterbox::error_category()))
                       .permanent_if([](const attempt_failure&) { return true; });
    for (const auto e : {errc::store_busy, errc::store_full, errc::store_io_error,
                         errc::store_corrupt, errc::store_error}) {
        CAPTURE(std::error_code(e).message());
        CHECK_FALSE(c.is_permanent(returned(e)));
        CHECK_FALSE(c.is_permanent(thrown(letterbox::error(e))));
        CHECK_FALSE(c.is_permanent(thrown(std::system_error(make_error_code(e)))));
        CHECK_FALSE(c.is_permanent(thrown_by_a_handler(letterbox::error(e))));
    }
    // The same rules do make everything else permanent.
    CHECK(c.is_permanent(returned(errc::timed_out)));
    // A store error even outweighs a payload error in the same failure.
    auto both = thrown(letterbox::error(errc::payload_malformed));
    both.error = errc::store_busy;
    CHECK_FALSE(classifier{}.is_permanent(both));
}

TEST_CASE("a rule of yours overrides the payload defaults", "[retry][classifier]") {
    const auto c = classifier{}.transient(errc::payload_malformed);
    CHECK_FALSE(c.is_permanent(returned(errc::payload_malformed)));
    CHECK_FALSE(c.is_permanent(thrown(letterbox::error(errc::payload_malformed))));
    CHECK(c.is_permanent(returned(errc::payload_type_mismatch))); // the other defaults stay

    const auto lenient_json = classifier{}.transient<nlohmann::json::parse_error>();
    CHECK_FALSE(lenient_json.is_permanent(json_parse_error()));
    CHECK(lenient_json.is_permanent(json_type_error()));

    // A broad rule catches letterbox::error too, since it is a std::runtime_error...
    const auto broad = classifier{}.transient<std::runtime_error>();
    CHECK_FALSE(broad.is_permanent(thrown(letterbox::error(errc::payload_malformed))));
    // ...unless a narrower rule comes first.
    const auto narrow_first =
        classifier{}.permanent(errc::payload_malformed).transient<std::runtime_error>();
    CHECK(narrow_first.is_permanent(thrown(letterbox::error(errc::payload_malformed))));
}

TEST_CASE("an exception-type rule matches that type and the types derived from it",
          "[retry][classifier]") {
    const auto c = classifier{}.permanent<std::logic_error>();
    CHECK(c.is_permanent(thrown(std::logic_error("x"))));
    // The exception_ptr holds a derived type; the rule names its base.
    CHECK(c.is_permanent(thrown(std::invalid_argument("x"))));
    CHECK(c.is_permanent(thrown(std::domain_error("x"))));
    CHECK_FALSE(c.is_permanent(thrown(std::runtime_error("x"))));
    CHECK_FALSE(c.is_permanent(thrown(std::exception())));
    // No exception, no match: an error code alone is not an exception.
    CHECK_FALSE(c.is_permanent(returned(errc::timed_out)));

    // A base does not match a rule that names a derived type.
    const auto derived_only = classifier{}.permanent<std::invalid_argument>();
    CHECK_FALSE(derived_only.is_permanent(thrown(std::logic_error("x"))));
    CHECK(derived_only.is_permanent(thrown(std::invalid_argument("x"))));

    // Non-class exceptions work too.
    CHECK(classifier{}.permanent<int>().is_permanent(thrown(7)));
}

TEST_CASE("the first matching rule decides", "[retry][classifier]") {
    const auto narrow_first =
        classifier{}.transient<std::invalid_argument>().permanent<std::logic_error>();
    CHECK_FALSE(narrow_first.is_permanent(thrown(std::invalid_argument("x"))));
    CHECK(narrow_first.is_permanent(thrown(std::domain_error("x"))));

    const auto broad_first =
        classifier{}.permanent<std::logic_error>().transient<std::invalid_argument>();
    CHECK(broad_first.is_permanent(thrown(std::invalid_argument("x"))));

    // Kinds of rules mix: here the error-code rule comes first.
    const auto mixed = classifier{}
                           .transient(errc::handler_failed)
                           .permanent<std::invalid_argument>()
                           .permanent(errc::handler_failed);
    CHECK_FALSE(mixed.is_permanent(thrown_by_a_handler(std::invalid_argument("x"))));
    CHECK(mixed.is_permanent(thrown(std::invalid_argument("x"))));
}

TEST_CASE("an error_code rule matches exactly that code, returned or thrown",
          "[retry][classifier]") {
    const auto denied = std::make_error_code(std::errc::permission_denied); // generic category
    const auto c = classifier{}.permanent(denied);
    CHECK(c.is_permanent(returned(denied)));
    CHECK(c.is_permanent(thrown(std::system_error(denied))));
    // The same errno in another category is another code.
    CHECK_FALSE(c.is_permanent(returned(std::error_code(denied.value(), std::system_category()))));
    CHECK_FALSE(c.is_permanent(returned(std::make_error_code(std::errc::io_error))));
    CHECK_FALSE(c.is_permanent(attempt_failure{}));

    // An empty code is "no error" and never matches.
    CHECK_FALSE(classifier{}.permanent(std::error_code{}).is_permanent(attempt_failure{}));
}

TEST_CASE("an error_condition rule matches every equivalent code, returned or thrown",
          "[retry][classifier]") {
    const auto c = classifier{}.permanent(std::errc::permission_denied);
    const int eacces = static_cast<int>(std::errc::permission_denied);
    CHECK(c.is_permanent(returned(std::make_error_code(std::errc::permission_denied))));
    CHECK(c.is_permanent(returned(std::error_code(eacces, std::system_category()))));
    CHECK(c.is_permanent(thrown(std::system_error(eacces, std::system_category()))));
    CHECK_FALSE(c.is_permanent(returned(std::make_error_code(std::errc::io_error))));
    CHECK_FALSE(c.is_permanent(returned(errc::timed_out)));
}

TEST_CASE("a letterbox errc rule matches that error, returned or thrown", "[retry][classifier]") {
    const auto c = classifier{}.permanent(errc::precondition_failed);
    CHECK(c.is_permanent(returned(errc::precondition_failed)));
    CHECK(c.is_permanent(thrown(letterbox::error(errc::precondition_failed, "x"))));
    CHECK_FALSE(c.is_permanent(returned(errc::not_found)));
}

TEST_CASE("permanent_if and transient_if see the whole failure", "[retry][classifier]") {
    const auto c = classifier{}
                       .transient_if([](const attempt_failure& f) { return f.attempt == 1; })
                       .permanent_if([](const attempt_failure& f) {
                           return f.message_id == "poison" || f.attempt > 3;
                       });
    attempt_failure f;
    f.message_id = "poison";
    CHECK_FALSE(c.is_permanent(f)); // attempt 1: the transient rule comes first
    f.attempt = 2;
    CHECK(c.is_permanent(f));
    f.message_id = "fine";
    CHECK_FALSE(c.is_permanent(f));
    f.attempt = 4;
    CHECK(c.is_permanent(f));
}

TEST_CASE("a classifier refuses an empty predicate", "[retry][classifier]") {
    classifier c;
    CHECK(backoff_test::error_thrown_by([&] { c.permanent_if({}); }) == errc::invalid_argument);
    CHECK(backoff_test::error_thrown_by([&] { c.transient_if(nullptr); }) ==
          errc::invalid_argument);
}

TEST_CASE("classifier builders chain on lvalues and on temporaries", "[retry][classifier]") {
    classifier c;
    STATIC_REQUIRE(std::is_same_v<decltype(c.permanent<std::logic_error>()), classifier&>);
    STATIC_REQUIRE(std::is_same_v<decltype(c.transient(errc::timed_out)), classifier&>);
    STATIC_REQUIRE(
        std::is_same_v<decltype(classifier{}.permanent<std::logic_error>()), classifier>);
    STATIC_REQUIRE(std::is_same_v<decltype(classifier{}.permanent_if({})), classifier>);
    CHECK(&c.permanent<std::logic_error>().transient(errc::timed_out) == &c);
    CHECK(c.is_permanent(thrown(std::logic_error("x"))));
}

TEST_CASE("a classifier is a copyable value", "[retry][classifier]") {
    const auto original = classifier{}.permanent<std::logic_error>();
    auto copy = original;
    copy.transient<std::invalid_argument>(); // comes after the logic_error rule: no effect
    copy.permanent<std::runtime_error>();
    CHECK(copy.is_permanent(thrown(std::runtime_error("x"))));
    CHECK_FALSE(original.is_permanent(thrown(std::runtime_error("x"))));
    CHECK(original.is_permanent(thrown(std::invalid_argument("x"))));
}

} // namespace unit_backoff_classifier
