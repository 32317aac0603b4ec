// SPDX-License-Identifier: BSL-1.0
// "Call first, then commit": idempotent(after_call(call, effect), ...) on a SQLite file, run by a
// consumer on the in-memory broker.

#include <letterbox/middleware/after_call.hpp>

#include <letterbox/sqlite.hpp>

#include <letterbox/backoff/immediate.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "support/pipeline_world.hpp"
#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace unit_middleware_after_call {

using namespace std::chrono_literals;
namespace mw = letterbox::middleware;

TEST_CASE("after_call: the call is made with no unit of work open, the effect commits its "
          "result with the inbox record, and a duplicate makes no second call",
          "[middleware][after_call][async][sqlite]") {
    test_support::simulation w;
    letterbox::in_memory::transport transport{w.broker, "pricing"};
    for (const char* name : {"quotes", "quotes.dlq"}) {
        letterbox::topology::queue q;
        q.name = name;
        REQUIRE_FALSE(w.await([&](auto h) { transport.async_declare(q, h); }));
    }
    pipeline::temp_dir dir;
    auto db = letterbox::sqlite::database::open(dir.file("pricing.db"));
    auto other = letterbox::sqlite::database::open(dir.file("pricing.db"));
    pipeline::exec(db, "CREATE TABLE quotes(id TEXT PRIMARY KEY, price INTEGER NOT NULL)");
    pipeline::exec(db, "CREATE TABLE probe(n INTEGER)");
    letterbox::sqlite::inbox_store inbox(db);

    auto timer = std::make_shared<decltype(w.clock.make_timer(w.io.get_executor()))>(
        w.clock.make_timer(w.io.get_executor()));
    int calls = 0;
    bool fail_next = false;
    // The slow call: while it waits, another connection can write, so no lock is held.
    auto call = [&](const letterbox::message&) -> boost::asio::awaitable<int> {
        ++calls;
        pipeline::exec(other, "INSERT INTO probe VALUES (1)");
        timer->expires_after(2s);
        co_await timer->async_wait(boost::asio::use_awaitable);
        if (std::exchange(fail_next, false))
            throw std::runtime_error("quote service unavailable");
        co_return 100 + calls;
    };
    int calls_seen_by_effect = 0;
    auto effect = [&](const letterbox::message& m, const int& price,
                      letterbox::sqlite::unit_of_work& u) -> std::error_code {
        calls_seen_by_effect = calls;
        return u.connection().exec("INSERT INTO quotes VALUES ('" + m.body + "', " +
                                   std::to_string(price) + ")");
    };
    auto handler = mw::idempotent(mw::after_call(call, effect), inbox, "pricing", w.clock);
    STATIC_REQUIRE(letterbox::async_handler<decltype(handler)>);
    auto pipeline = mw::compose(handler, mw::retry(letterbox::backoff::immediate(2)),
                                mw::dead_letter({}, w.clock));
    letterbox::consumer_options options;
    options.consume.queue = "quotes";
    letterbox::consumer c(transport, pipeline, w.clock, options);
    std::optional<std::error_code> started;
    c.async_start([&](std::error_code ec, const std::string&) { started = ec; });
    REQUIRE(w.drive_until([&] { return started.has_value(); }));

    letterbox::message_id_generator ids{7};
    letterbox::message a;
    a.id = ids();
    a.routing_key = "quotes";
    a.body = "a";
    auto publish = [&](const letterbox::message& m) {
        REQUIRE_FALSE(w.await([&](auto h) { transport.async_publish(m, h); }));
    };
    publish(a);
    REQUIRE(w.drive_until([&] { return c.stats().acked == 1; }));
    CHECK(calls == 1);
    CHECK(calls_seen_by_effect == 1); // the effect ran after the call
    CHECK(pipeline::scalar(db, "SELECT price FROM quotes WHERE id = 'a'") == 101);
    CHECK(pipeline::scalar(other, "SELECT count(*) FROM probe") == 1);

    publish(a); // a duplicate: acknowledged without a second call
    REQUIRE(w.drive_until([&] { return c.stats().acked == 2; }));
    CHECK(calls == 1);
    CHECK(handler.stats().duplicates == 1);

    letterbox::message b = a; // a call that fails once: retried, nothing recorded meanwhile
    b.id = ids();
    b.body = "b";
    fail_next = true;
    publish(b);
    REQUIRE(w.drive_until([&] { return c.stats().acked == 3; }));
    CHECK(calls == 3);
    CHECK(c.stats().retried == 1);
    CHECK(handler.stats().failed == 1);
    CHECK(handler.stats().processed == 2);
    CHECK(pipeline::scalar(db, "SELECT price FROM quotes WHERE id = 'b'") == 103);
    CHECK(w.broker.queue("quotes.dlq")->ready == 0);
}

TEST_CASE("after_call: a message without a key is refused before the call",
          "[middleware][after_call][async]") {
    letterbox::in_memory_inbox_store inbox;
    letterbox::virtual_clock clock;
    int calls = 0;
    auto handler =
        mw::idempotent(mw::after_call(
                           [&](const letterbox::message&) -> boost::asio::awaitable<void> {
                               ++calls;
                               co_return;
                           },
                           [](const letterbox::message&, letterbox::in_memory_unit_of_work&) {}),
                       inbox, "c", clock);
    boost::asio::io_context io;
    letterbox::message keyless; // the nil id
    std::optional<std::error_code> result;
    boost::asio::co_spawn(io, handler(keyless),
                          [&](const std::exception_ptr&, std::error_code ec) { result = ec; });
    io.run();
    REQUIRE(result);
    CHECK(*result == letterbox::errc::missing_idempotency_key);
    CHECK(calls == 0);
    CHECK(handler.stats().refused == 1);
}

TEST_CASE("after_call counts one failure per failed attempt, whether the call or the effect "
          "failed",
          "[middleware][after_call][async]") {
    letterbox::in_memory_inbox_store inbox;
    letterbox::virtual_clock clock;
    bool call_fails = false;
    auto handler = mw::idempotent(
        mw::after_call(
            [&](const letterbox::message&) -> boost::asio::awaitable<int> {
                if (call_fails)
                    throw std::runtime_error("call failed");
                co_return 1;
            },
            [](const letterbox::message&, const int&, letterbox::in_memory_unit_of_work&) {
                throw std::runtime_error("effect failed");
            }),
        inbox, "c", clock);
    letterbox::message_id_generator ids{3};
    letterbox::message m;
    m.id = ids();
    auto run = [&] {
        boost::asio::io_context io;
        std::optional<std::string> failure;
        boost::asio::co_spawn(io, handler(m),
                              [&](const std::exception_ptr& e, const std::error_code&) {
                                  try {
                                      if (e)
                                          std::rethrow_exception(e);
                                  } catch (const std::exception& x) {
                                      failure = x.what();
                                  }
                              });
        io.run();
        return failure;
    };
    CHECK(run() == std::optional<std::string>("effect failed"));
    CHECK(handler.stats().failed == 1);
    call_fails = true;
    CHECK(run() == std::optional<std::string>("call failed"));
    CHECK(handler.stats().failed == 2);
    std::error_code ec;
    CHECK(inbox.size(ec) == 0);
}

} // namespace unit_middleware_after_call
