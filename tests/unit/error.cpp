// SPDX-License-Identifier: BSL-1.0
#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

namespace unit_error {

using namespace letterbox;

TEST_CASE("letterbox error codes have their own category and readable messages", "[error]") {
    std::error_code ec = errc::outcome_unknown;
    CHECK(ec.category() == letterbox::error_category());
    CHECK(std::string(ec.category().name()) == "letterbox");
    CHECK(ec.message().find("unknown") != std::string::npos);
    CHECK(std::error_code(errc::not_found) != std::error_code(errc::precondition_failed));
    CHECK(std::error_code(static_cast<errc>(9999)).message() == "unknown letterbox error");
}

TEST_CASE("protocol errors map to their AMQP reply codes and names", "[error]") {
    CHECK(amqp_reply_code(errc::not_found) == 404);
    CHECK(amqp_reply_code(errc::precondition_failed) == 406);
    CHECK(amqp_reply_code(errc::not_implemented) == 540);
    CHECK(amqp_reply_code(errc::no_route) == 312);
    CHECK(amqp_reply_code(errc::outcome_unknown) == 0);
    CHECK(std::string(amqp_reply_name(errc::resource_locked)) == "RESOURCE_LOCKED");
    CHECK(std::string(amqp_reply_name(errc::closed)).empty());
}

TEST_CASE("letterbox::error carries its code", "[error]") {
    try {
        throw letterbox::error(errc::lease_lost, "row 5");
    } catch (const std::system_error& e) {
        CHECK(e.code() == errc::lease_lost);
        CHECK(std::string(e.what()).find("row 5") != std::string::npos);
    }
}

TEST_CASE("store errors have distinct codes and say what happened", "[error]") {
    const errc store_errors[] = {
        errc::store_not_a_database, errc::store_corrupt,        errc::store_busy,
        errc::store_full,           errc::store_io_error,       errc::store_unavailable,
        errc::store_readonly,       errc::store_schema_too_new, errc::store_error};
    for (const auto e : store_errors) {
        const std::error_code ec = e;
        INFO(ec.value());
        CHECK(ec.message() != "unknown letterbox error");
        CHECK(ec.message().find("store") != std::string::npos);
        CHECK(amqp_reply_code(e) == 0);
        CHECK(is_store_error(ec));
    }
    CHECK_FALSE(is_store_error(errc::already_processed));
    CHECK_FALSE(is_store_error(errc::connection_closed));
    CHECK_FALSE(is_store_error(std::make_error_code(std::errc::io_error)));
    CHECK(std::error_code(errc::store_busy) != std::error_code(errc::store_full));
}

TEST_CASE("is_transport_failure separates the way to the broker from the message", "[error]") {
    using letterbox::errc;
    using letterbox::is_transport_failure;
    CHECK_FALSE(is_transport_failure({}));
    for (auto e : {errc::connection_forced, errc::channel_closed, errc::connection_closed,
                   errc::outcome_unknown, errc::timed_out, errc::closed, errc::frame_error})
        CHECK(is_transport_failure(make_error_code(e)));
    for (auto e : {errc::no_route, errc::publish_nacked, errc::not_found, errc::precondition_failed,
                   errc::payload_malformed, errc::store_busy})
        CHECK_FALSE(is_transport_failure(make_error_code(e)));
    CHECK(is_transport_failure(std::make_error_code(std::errc::connection_refused)));
}

} // namespace unit_error
