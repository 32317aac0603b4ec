// SPDX-License-Identifier: BSL-1.0
// The completion convention of every asynchronous operation: `boost::system::error_code` first,
// then one value at most, as in Asio and Beast. So `use_awaitable` and `use_future` throw a
// failure as `boost::system::system_error`, and `as_tuple` and `redirect_error` hand the code over.
#include <letterbox/error_code.hpp>

#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/error.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace unit_error_code {

namespace {

namespace asio = boost::asio;
using letterbox::errc;
using transport = letterbox::in_memory::transport;

// What `use_future` makes of each operation: a future of its one value, never of its error code.
static_assert(std::is_same_v<decltype(std::declval<transport&>().async_publish(
                                 std::declval<const letterbox::message&>(), asio::use_future)),
                             std::future<void>>);
static_assert(
    std::is_same_v<decltype(std::declval<transport&>().async_declare(
                       std::declval<const letterbox::topology::queue&>(), asio::use_future)),
                   std::future<void>>);
static_assert(std::is_same_v<decltype(std::declval<transport&>().async_consume(
                                 std::declval<const letterbox::consume_options&>(),
                                 [](letterbox::delivery) {}, asio::use_future)),
                             std::future<std::string>>);
static_assert(std::is_same_v<decltype(std::declval<transport&>().async_ack(
                                 std::declval<const letterbox::delivery&>(), asio::use_future)),
                             std::future<void>>);
static_assert(std::is_same_v<decltype(std::declval<transport&>().async_get(
                                 std::declval<const std::string&>(), asio::use_future)),
                             std::future<std::optional<letterbox::delivery>>>);
static_assert(std::is_same_v<decltype(std::declval<transport&>().async_queue_depth(
                                 std::declval<const std::string&>(), asio::use_future)),
                             std::future<std::uint32_t>>);
static_assert(std::is_same_v<decltype(std::declval<transport&>().async_close(asio::use_future)),
                             std::future<void>>);
static_assert(std::is_same_v<decltype(std::declval<letterbox::in_memory::broker&>().async_wait_up(
                                 asio::use_future)),
                             std::future<void>>);
using dlq = letterbox::dlq::dead_letter_queue<transport>;
static_assert(std::is_same_v<decltype(std::declval<dlq&>().async_depth(asio::use_future)),
                             std::future<std::uint32_t>>);
static_assert(
    std::is_same_v<decltype(std::declval<dlq&>().async_replay(
                       std::declval<letterbox::dlq::dead_letter_filter>(), asio::use_future)),
                   std::future<letterbox::dlq::replay_result>>);

/// An in-memory broker and a transport on one io_context, and a coroutine run to its end.
struct world {
    asio::io_context io;
    letterbox::virtual_clock clock;
    letterbox::in_memory::broker broker{io.get_executor(), clock};
    transport t{broker};

    /// Runs `body` as a coroutine until it returns, at most 5 s; rethrows what it throws.
    void run(std::function<asio::awaitable<void>()> body) {
        bool done = false;
        std::exception_ptr thrown;
        asio::co_spawn(io, std::move(body), [&](std::exception_ptr e) {
            done = true;
            thrown = e;
        });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
        while (!done && std::chrono::steady_clock::now() < deadline)
            io.run_one_for(std::chrono::milliseconds{50});
        REQUIRE(done);
        if (thrown)
            std::rethrow_exception(thrown);
    }

    /// A binding from an exchange that was never declared: the broker answers `not_found`.
    static letterbox::topology::binding dangling() {
        return {.source = "never.declared", .destination = "q", .routing_key = "k"};
    }

    // Named, not a temporary in the co_await expression: g++ 12 destroys such a temporary
    // wrongly (README, "Requirements").
    asio::awaitable<void> declare_queue() {
        const letterbox::topology::queue q{.name = "q"};
        co_await t.async_declare(q, asio::use_awaitable);
    }
};

} // namespace

TEST_CASE("error_code holds letterbox's codes as they are", "[error_code]") {
    const letterbox::error_code ec = errc::not_found;
    CHECK(ec == errc::not_found);
    CHECK(ec != errc::no_route);
    CHECK(ec.message() == make_error_code(errc::not_found).message());
    const std::error_code back = ec;
    CHECK(back == make_error_code(errc::not_found));
    CHECK(&back.category() == &letterbox::error_category());
    const letterbox::error_code lost = errc::connection_closed;
    CHECK(lost == letterbox::condition::transport_failure);
    CHECK_FALSE(ec == letterbox::condition::transport_failure);
}

TEST_CASE("a failed operation throws boost::system::system_error under use_awaitable",
          "[error_code]") {
    world w;
    const letterbox::topology::binding dangling = world::dangling();
    std::optional<letterbox::error_code> caught;
    w.run([&]() -> asio::awaitable<void> {
        co_await w.declare_queue();
        try {
            co_await w.t.async_bind(dangling, asio::use_awaitable);
        } catch (const boost::system::system_error& e) {
            caught = e.code();
        }
    });
    REQUIRE(caught.has_value());
    CHECK(*caught == errc::not_found);
}

TEST_CASE("as_tuple and redirect_error hand a failed operation's code over", "[error_code]") {
    world w;
    const letterbox::topology::binding dangling = world::dangling();
    std::optional<letterbox::error_code> from_tuple;
    letterbox::error_code redirected;
    w.run([&]() -> asio::awaitable<void> {
        co_await w.declare_queue();
        auto [ec] = co_await w.t.async_bind(dangling, asio::as_tuple(asio::use_awaitable));
        from_tuple = ec;
        co_await w.t.async_bind(dangling, asio::redirect_error(asio::use_awaitable, redirected));
    });
    REQUIRE(from_tuple.has_value());
    CHECK(*from_tuple == errc::not_found);
    CHECK(redirected == errc::not_found);
}

TEST_CASE("a successful operation gives its one value under use_awaitable", "[error_code]") {
    world w;
    std::optional<std::uint32_t> depth;
    w.run([&]() -> asio::awaitable<void> {
        co_await w.declare_queue();
        letterbox::message m;
        m.routing_key = "q";
        m.body = "x";
        co_await w.t.async_publish(m, asio::use_awaitable);
        depth = co_await w.t.async_queue_depth("q", asio::use_awaitable);
    });
    REQUIRE(depth.has_value());
    CHECK(*depth == 1);
}

TEST_CASE("a handler may still take std::error_code", "[error_code]") {
    world w;
    std::optional<std::error_code> got;
    w.run([&]() -> asio::awaitable<void> {
        co_await w.declare_queue();
        w.t.async_bind(world::dangling(), [&](std::error_code ec) { got = ec; });
        co_return;
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
    while (!got && std::chrono::steady_clock::now() < deadline)
        w.io.run_one_for(std::chrono::milliseconds{50});
    REQUIRE(got.has_value());
    CHECK(*got == make_error_code(errc::not_found));
}

} // namespace unit_error_code
