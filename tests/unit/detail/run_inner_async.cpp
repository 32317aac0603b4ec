// SPDX-License-Identifier: BSL-1.0
#include <letterbox/detail/run_inner_async.hpp>

#include <letterbox/concepts/async_delivery_handler.hpp>
#include <letterbox/concepts/async_handler.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <exception>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace unit_detail_run_inner_async {

namespace {

using boost::asio::awaitable;
using letterbox::message;
using letterbox::middleware::disposition;
using letterbox::middleware::handling;

// Runs `run_inner_async(h, x)` to completion on an io_context and gives its disposition.
template <class H>
disposition run(H h) {
    boost::asio::io_context io;
    letterbox::delivery d;
    d.msg.body = "m";
    std::optional<disposition> result;
    boost::asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
            const handling x{d, 1};
            result = co_await letterbox::detail::run_inner_async(h, x);
        },
        [](const std::exception_ptr& e) {
            if (e)
                std::rethrow_exception(e);
        });
    io.run();
    REQUIRE(result);
    return std::move(*result);
}

// An asynchronous operation that completes, posted, with `ec`.
struct completes_with {
    boost::system::error_code ec;
    template <class Token>
    auto operator()(const message&, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            [ec = ec](auto handler) {
                auto ex = boost::asio::get_associated_executor(handler);
                boost::asio::post(ex,
                                  [handler = std::move(handler), ec]() mutable { handler(ec); });
            },
            token);
    }
};

} // namespace

TEST_CASE("run_inner_async: a coroutine handler's completion, error code or exception is its "
          "disposition",
          "[detail][async]") {
    CHECK(run([](const message&) -> awaitable<void> { co_return; }).what() ==
          disposition::kind::ack);
    const auto failed = run([](const message&) -> awaitable<std::error_code> {
        co_return letterbox::errc::missing_idempotency_key;
    });
    REQUIRE(failed.failed());
    CHECK(failed.failure()->error == letterbox::errc::missing_idempotency_key);
    CHECK(failed.failure()->permanent); // the code's own reason, as run_inner gives it
    const auto thrown = run([](const message&) -> awaitable<void> {
        throw std::runtime_error("down");
        co_return;
    });
    REQUIRE(thrown.failed());
    CHECK(thrown.failure()->exception_message == "down");
}

TEST_CASE("run_inner_async: a handler that takes a completion token keeps the Boost error code "
          "use_awaitable throws",
          "[detail][async]") {
    STATIC_REQUIRE(letterbox::async_handler<completes_with>);
    CHECK(run(completes_with{}).what() == disposition::kind::ack);
    const auto aborted = run(completes_with{boost::asio::error::operation_aborted});
    REQUIRE(aborted.failed());
    CHECK(aborted.failure()->error ==
          std::error_code(boost::system::error_code(boost::asio::error::operation_aborted)));
}

TEST_CASE("run_inner_async: a coroutine delivery handler decides, and a synchronous handler "
          "runs as run_inner runs it",
          "[detail][async]") {
    auto deciding = [](const handling& x) -> awaitable<disposition> {
        co_return x.d.msg.body == "m" ? disposition::requeue({}) : disposition::ack();
    };
    STATIC_REQUIRE(letterbox::async_delivery_handler<decltype(deciding)>);
    CHECK(run(deciding).what() == disposition::kind::requeue);
    CHECK(run([](const message&) { return std::error_code{}; }).what() == disposition::kind::ack);
}

} // namespace unit_detail_run_inner_async
