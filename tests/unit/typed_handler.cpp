// SPDX-License-Identifier: BSL-1.0

#include <letterbox/typed_handler.hpp>

#include <letterbox/concepts/async_handler.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/error.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/middleware/idempotent.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

#include <exception>
#include <optional>

#include <string>
#include <system_error>

namespace unit_typed_handler {

namespace {

struct order {
    int id = 0;
    std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id, sku)

letterbox::message json(std::string body) {
    letterbox::message m;
    m.body = std::move(body);
    m.properties.content_type = "application/json";
    return m;
}

using plain = decltype(letterbox::typed<order>([](const order&) {}));
using with_message =
    decltype(letterbox::typed<order>([](const order&, const letterbox::message&) {}));
using effect =
    decltype(letterbox::typed<order>([](const order&, letterbox::in_memory_unit_of_work&) {}));

} // namespace

// A typed function of the value alone (or with the message) is a handler; one that also takes
// the unit of work is an idempotent effect, and not a handler.
static_assert(letterbox::handler<plain>);
static_assert(letterbox::handler<with_message>);
static_assert(!letterbox::handler<effect>);
static_assert(letterbox::transactional_effect<effect, letterbox::in_memory_unit_of_work>);

TEST_CASE("typed decodes the body and calls the function with the value", "[typed_handler]") {
    order got;
    std::string routing_key;
    auto h = letterbox::typed<order>([&](const order& o, const letterbox::message& m) {
        got = o;
        routing_key = m.routing_key;
        return std::error_code{};
    });
    auto m = json(R"({"id": 7, "sku": "lamp"})");
    m.routing_key = "orders";
    CHECK_FALSE(h(m));
    CHECK(got.id == 7);
    CHECK(got.sku == "lamp");
    CHECK(routing_key == "orders");
}

TEST_CASE("typed refuses a payload that does not decode, with the decoder's text, before the "
          "function runs",
          "[typed_handler]") {
    int calls = 0;
    letterbox::in_memory_unit_of_work uow;
    auto h =
        letterbox::typed<order>([&](const order&, letterbox::in_memory_unit_of_work&) { ++calls; });
    try {
        h(json(R"({"id": 7})"), uow);
        FAIL("an order without a sku decoded");
    } catch (const letterbox::error& e) {
        CHECK(e.code() == letterbox::errc::payload_type_mismatch);
        CHECK_THAT(e.what(), Catch::Contains("sku"));
    }
    try {
        h(json("not json"), uow);
        FAIL("a body that is not JSON decoded");
    } catch (const letterbox::error& e) {
        CHECK(e.code() == letterbox::errc::payload_malformed);
        CHECK_THAT(e.what(), Catch::Contains("not JSON"));
    }
    auto text = json(R"({"id": 7, "sku": "lamp"})");
    text.properties.content_type = "text/plain";
    CHECK_THROWS_WITH(h(text, uow), Catch::Contains("text/plain"));
    CHECK(calls == 0);
}

TEST_CASE("typed around a coroutine keeps the decoded value alive while the coroutine waits",
          "[typed_handler][async]") {
    std::optional<order> got;
    auto h = letterbox::typed<order>([&](const order& o) -> boost::asio::awaitable<void> {
        // Suspends: the value must outlive the call that decoded it.
        co_await boost::asio::post(co_await boost::asio::this_coro::executor,
                                   boost::asio::use_awaitable);
        got = o;
    });
    STATIC_REQUIRE(letterbox::async_handler<decltype(h)>);
    boost::asio::io_context io;
    const auto m = json(R"({"id": 9, "sku": "desk"})");
    bool completed = false;
    boost::asio::co_spawn(io, h(m), [&](const std::exception_ptr& e) { completed = !e; });
    io.run();
    CHECK(completed);
    REQUIRE(got);
    CHECK(got->id == 9);
    CHECK(got->sku == "desk");
}

} // namespace unit_typed_handler
