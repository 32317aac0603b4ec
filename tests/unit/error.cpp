// SPDX-License-Identifier: BSL-1.0
#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <system_error>

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
    const errc store_errors[] = {errc::store_not_a_database,
                                 errc::store_corrupt,
                                 errc::store_busy,
                                 errc::store_full,
                                 errc::store_io_error,
                                 errc::store_unavailable,
                                 errc::store_readonly,
                                 errc::store_schema_too_new,
                                 errc::store_error,
                                 errc::store_schema_too_old,
                                 errc::store_serialization_failure,
                                 errc::store_deadlock,
                                 errc::store_connection_lost,
                                 errc::store_unique_violation};
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

TEST_CASE("the conditions compare equal to the codes of their kind, of any category", "[error]") {
    static_assert(std::is_error_condition_enum_v<condition>);
    const std::error_condition store = condition::store_error;
    const std::error_condition transport = condition::transport_failure;
    CHECK(store.category() == condition_category());
    CHECK(std::string(condition_category().name()) == "letterbox.condition");
    CHECK(store.message() == "store error");
    CHECK(transport.message() == "transport failure");
    CHECK(store != transport);

    for (auto e :
         {errc::store_not_a_database, errc::store_busy, errc::store_full, errc::store_error}) {
        const std::error_code ec = e;
        INFO(ec.message());
        CHECK(ec == condition::store_error);
        CHECK(ec != condition::transport_failure);
        CHECK(condition::store_error == ec);
    }
    for (auto e : {errc::connection_forced, errc::internal_error, errc::channel_closed,
                   errc::connection_closed, errc::outcome_unknown, errc::consumer_cancelled,
                   errc::timed_out, errc::closed}) {
        const std::error_code ec = e;
        INFO(ec.message());
        CHECK(ec == condition::transport_failure);
        CHECK(ec != condition::store_error);
    }
    // The message's own failures are neither.
    for (auto e : {errc::no_route, errc::publish_nacked, errc::not_found, errc::precondition_failed,
                   errc::payload_malformed, errc::already_processed, errc::handler_failed}) {
        const std::error_code ec = e;
        INFO(ec.message());
        CHECK(ec != condition::transport_failure);
        CHECK(ec != condition::store_error);
    }
    // A code of another category: a transport failure (sockets, TLS), never a store error, even
    // with a value in the store range.
    const std::error_code refused = std::make_error_code(std::errc::connection_refused);
    CHECK(refused == condition::transport_failure);
    CHECK(refused != condition::store_error);
    const std::error_code foreign_400(400, std::generic_category());
    CHECK(foreign_400 != condition::store_error);
    // No error is neither.
    CHECK(std::error_code{} != condition::transport_failure);
    CHECK(std::error_code{} != condition::store_error);
    // The thin functions agree with the conditions.
    for (const std::error_code ec :
         {std::error_code(errc::store_busy), std::error_code(errc::timed_out),
          std::error_code(errc::not_found), refused, std::error_code{}}) {
        CHECK(is_store_error(ec) == (ec == condition::store_error));
        CHECK(is_transport_failure(ec) == (ec == condition::transport_failure));
    }
}

} // namespace unit_error
