// SPDX-License-Identifier: BSL-1.0
// Runs the transport conformance suite, and a few focused checks, against a real RabbitMQ
// broker: the one LETTERBOX_AMQP_URL names (tests/tools/rabbitmq.sh start prints it). Every case
// is hidden ([.integration]) and fails clearly when the variable is not set.

#include <letterbox/amqp/transport.hpp>
#include <letterbox/error_code.hpp>

#include <letterbox/testing/transport_suite.hpp>

#include "amqp_broker.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace integration_amqp_transport {

static_assert(letterbox::transport<letterbox::amqp::transport>);
static_assert(letterbox::queue_reader<letterbox::amqp::transport>);

namespace {

using amqp_test::amqp_transport_fixture;

static_assert(letterbox::testing::transport_suite_fixture<amqp_transport_fixture>);

using amqp_transport_fixtures = std::tuple<amqp_transport_fixture>;

} // namespace

LETTERBOX_TRANSPORT_SUITE_WITH_TAGS(amqp_transport_fixtures, "[.integration][amqp]")

// ---- focused checks ------------------------------------------------------------------------

namespace {

using letterbox::delivery;
using letterbox::message;

/// A fixture with helpers that run one operation to completion.
struct broker {
    amqp_transport_fixture f;
    std::chrono::milliseconds timeout{std::chrono::seconds{20}};

    template <class Start>
    std::error_code await(Start&& start) {
        auto result = std::make_shared<std::optional<std::error_code>>();
        start([result](std::error_code ec) { *result = ec; });
        if (!f.run_until([&] { return result->has_value(); }, timeout))
            return make_error_code(letterbox::errc::timed_out);
        return **result;
    }

    std::string fresh_queue(letterbox::amqp::transport& t, std::string_view stem) {
        letterbox::topology::queue q;
        q.name = f.unique_name(stem);
        q.arguments.set("x-expires", std::int64_t{600000});
        REQUIRE(await([&](auto done) { t.async_declare(q, done); }) == std::error_code{});
        return q.name;
    }

    /// Starts a consumer on `queue` that records every delivery and acks it; returns once the
    /// consume completed (REQUIREs success). The deliveries are appended to the vector.
    std::shared_ptr<std::vector<delivery>> consume_acking_all(letterbox::amqp::transport& t,
                                                              const std::string& queue) {
        auto got = std::make_shared<std::vector<delivery>>();
        letterbox::consume_options o;
        o.queue = queue;
        auto consumed = std::make_shared<std::optional<std::error_code>>();
        t.async_consume(
            o,
            [got, &t](delivery d) {
                got->push_back(d);
                t.async_ack(d, [](std::error_code) {});
            },
            [consumed](std::error_code ec, std::string) { *consumed = ec; });
        REQUIRE(f.run_until([&] { return consumed->has_value(); }, timeout));
        REQUIRE(**consumed == std::error_code{});
        return got;
    }

    /// Publishes `body` to `queue` once and waits for the outcome.
    std::error_code publish(letterbox::amqp::transport& t, const std::string& queue,
                            std::string body) {
        message m;
        m.id = letterbox::message_id_generator{}();
        m.routing_key = queue;
        m.body = std::move(body);
        return await([&](auto done) { t.async_publish(m, done); });
    }

    /// After a lost connection, publishes fail (connection_closed, outcome_unknown) until the
    /// transport has reconnected, declared its queue again and resubscribed: publishes `body`
    /// until one is confirmed, within `timeout` and 1,000 attempts; returns the last outcome.
    std::error_code publish_until_confirmed(letterbox::amqp::transport& t, const std::string& queue,
                                            const std::string& body) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::error_code last = make_error_code(letterbox::errc::timed_out);
        for (int attempt = 0; attempt < 1000 && std::chrono::steady_clock::now() < deadline;
             ++attempt) {
            last = publish(t, queue, body);
            if (!last)
                break;
        }
        return last;
    }
};

} // namespace

TEST_CASE("amqp transport: a round trip keeps every property and header", "[.integration][amqp]") {
    broker b;
    auto t = b.f.make();
    const auto queue = b.fresh_queue(t, "props");

    message m;
    m.id = letterbox::message_id_generator{}();
    m.type = "orders.created";
    m.routing_key = queue;
    m.body = std::string("bytes\0with nul", 14);
    m.headers.set("x-string", std::string("text"));
    m.headers.set("x-int", std::int64_t{-42});
    m.headers.set("x-bool", true);
    m.headers.set("x-double", 2.5);
    letterbox::field_table nested;
    nested.set("inner", std::int32_t{7});
    m.headers.set("x-table", nested);
    m.properties.content_type = "application/octet-stream";
    m.properties.content_encoding = "identity";
    m.properties.correlation_id = "corr-1";
    m.properties.reply_to = "replies";
    m.properties.expiration = "600000";
    m.properties.timestamp = letterbox::timestamp{std::chrono::seconds{1700000000}};
    m.properties.persistent = true;
    m.properties.priority = std::uint8_t{3};
    m.properties.app_id = "letterbox-tests";
    m.properties.user_id = "guest"; // RabbitMQ checks it against the connection's user
    REQUIRE(b.await([&](auto done) { t.async_publish(m, done); }) == std::error_code{});

    auto got = std::make_shared<std::vector<delivery>>();
    auto tag = std::make_shared<std::optional<std::string>>();
    letterbox::consume_options o;
    o.queue = queue;
    t.async_consume(
        o, [got](delivery d) { got->push_back(std::move(d)); },
        [tag](std::error_code ec, std::string consumer_tag) {
            REQUIRE(!ec);
            *tag = std::move(consumer_tag);
        });
    REQUIRE(b.f.run_until([&] { return !got->empty(); }, b.timeout));
    const auto d = got->front(); // a copy: more deliveries are appended below
    CHECK(d.msg.id == m.id);
    CHECK(d.msg.type == m.type);
    CHECK(d.msg.body == m.body);
    CHECK(d.msg.headers == m.headers);
    CHECK(d.msg.properties == m.properties);
    CHECK(d.msg.exchange.empty());
    CHECK(d.msg.routing_key == queue);
    CHECK_FALSE(d.redelivered);
    CHECK(d.queue == queue);
    CHECK(d.consumer_tag == **tag);

    // Requeue it: it comes back flagged as redelivered.
    REQUIRE(b.await([&](auto done) { t.async_nack(d, true, done); }) == std::error_code{});
    REQUIRE(b.f.run_until([&] { return got->size() == 2; }, b.timeout));
    CHECK((*got)[1].redelivered);
    CHECK((*got)[1].msg == d.msg);
    CHECK(b.await([&](auto done) { t.async_ack((*got)[1], done); }) == std::error_code{});
    CHECK(b.await([&](auto done) { t.async_close(done); }) == std::error_code{});
}

TEST_CASE("amqp transport: an unroutable mandatory publish completes with no_route",
          "[.integration][amqp]") {
    broker b;
    auto t = b.f.make();
    letterbox::topology::exchange x;
    x.name = b.f.unique_name("unroutable");
    x.durable = false;
    x.auto_delete = true;
    REQUIRE(b.await([&](auto done) { t.async_declare(x, done); }) == std::error_code{});
    const auto queue = b.fresh_queue(t, "routable");

    // Interleave routable and unroutable publishes: each return is matched to its publish.
    std::vector<std::optional<std::error_code>> results(6);
    for (std::size_t i = 0; i < results.size(); ++i) {
        message m;
        m.id = letterbox::message_id_generator{}();
        m.exchange = i % 2 == 0 ? x.name : std::string();
        m.routing_key = i % 2 == 0 ? "nowhere" : queue;
        m.body = std::to_string(i);
        t.async_publish(m, [&results, i](std::error_code ec) { results[i] = ec; });
    }
    REQUIRE(b.f.run_until(
        [&] {
            for (const auto& r : results)
                if (!r)
                    return false;
            return true;
        },
        b.timeout));
    for (std::size_t i = 0; i < results.size(); ++i) {
        INFO("publish " << i);
        if (i % 2 == 0)
            CHECK(*results[i] == letterbox::errc::no_route);
        else
            CHECK(*results[i] == std::error_code{});
    }
    CHECK(b.await([&](auto done) { t.async_close(done); }) == std::error_code{});
}

TEST_CASE("amqp transport: under use_awaitable a failure throws system_error, and as_tuple gives "
          "its code",
          "[.integration][amqp]") {
    broker b;
    auto t = b.f.make();
    const auto queue = b.fresh_queue(t, "awaited");
    const letterbox::topology::binding dangling{
        .source = b.f.unique_name("never.declared"), .destination = queue, .routing_key = "k"};
    std::optional<std::uint32_t> depth;
    std::optional<letterbox::error_code> thrown, returned;
    std::exception_ptr escaped;
    bool done = false;
    boost::asio::co_spawn(
        t.get_executor(),
        [&]() -> boost::asio::awaitable<void> {
            depth = co_await t.async_queue_depth(queue, boost::asio::use_awaitable);
            try {
                co_await t.async_bind(dangling, boost::asio::use_awaitable);
            } catch (const boost::system::system_error& e) {
                thrown = e.code();
            }
            auto [ec] =
                co_await t.async_bind(dangling, boost::asio::as_tuple(boost::asio::use_awaitable));
            returned = ec;
        },
        [&](std::exception_ptr e) {
            escaped = e;
            done = true;
        });
    REQUIRE(b.f.run_until([&] { return done; }, b.timeout));
    CHECK_FALSE(escaped);
    REQUIRE(depth.has_value());
    CHECK(*depth == 0);
    REQUIRE(thrown.has_value());
    CHECK(*thrown == letterbox::errc::not_found);
    REQUIRE(returned.has_value());
    CHECK(*returned == letterbox::errc::not_found);
    CHECK(b.await([&](auto done_) { t.async_close(done_); }) == std::error_code{});
}

TEST_CASE("amqp transport: a consumer survives a lost connection and resumes",
          "[.integration][amqp]") {
    broker b;
    auto t = b.f.make();
    const auto queue = b.fresh_queue(t, "survive");
    const auto got = b.consume_acking_all(t, queue);

    REQUIRE(b.publish(t, queue, "before") == std::error_code{});
    REQUIRE(b.f.run_until([&] { return got->size() == 1; }, b.timeout));

    t.simulate_connection_loss();
    REQUIRE(b.publish_until_confirmed(t, queue, "after") == std::error_code{});
    REQUIRE(
        b.f.run_until([&] { return !got->empty() && got->back().msg.body == "after"; }, b.timeout));
    CHECK(b.await([&](auto done) { t.async_close(done); }) == std::error_code{});
}

namespace {

using amqp_test::broker_is_controllable;
using amqp_test::rabbitmqctl;

/// The broker's memory alarm, raised for the object's lifetime (a watermark of 0): the broker
/// sends connection.blocked and stops reading from publishing connections until it clears.
struct memory_alarm {
    bool raised = rabbitmqctl("set_vm_memory_high_watermark 0");
    memory_alarm() = default;
    memory_alarm(const memory_alarm&) = delete;
    memory_alarm& operator=(const memory_alarm&) = delete;
    ~memory_alarm() { (void)lift(); }
    bool lift() {
        if (raised && rabbitmqctl("set_vm_memory_high_watermark 0.4"))
            raised = false;
        return !raised;
    }
};

} // namespace

TEST_CASE("amqp transport: a consumer survives the broker closing its connection",
          "[.integration][amqp][disruptive]") {
    if (!broker_is_controllable())
        return;
    broker b;
    auto t = b.f.make();
    const auto queue = b.fresh_queue(t, "forced");
    const auto got = b.consume_acking_all(t, queue);

    // rabbitmqctl blocks this thread for about a second; the broker sends connection.close
    // (320) meanwhile, which the transport reads once run_until runs again.
    REQUIRE(rabbitmqctl("close_all_connections 'letterbox integration test'"));

    REQUIRE(b.publish_until_confirmed(t, queue, "after") == std::error_code{});
    REQUIRE(
        b.f.run_until([&] { return !got->empty() && got->back().msg.body == "after"; }, b.timeout));
    CHECK(b.await([&](auto done) { t.async_close(done); }) == std::error_code{});
}

TEST_CASE("amqp transport: publishes wait while the broker blocks publishing, then complete",
          "[.integration][amqp][disruptive]") {
    if (!broker_is_controllable())
        return;
    broker b;
    auto t = b.f.make();
    const auto queue = b.fresh_queue(t, "blocked");

    memory_alarm alarm;
    REQUIRE(alarm.raised);
    std::vector<std::optional<std::error_code>> results(3);
    for (std::size_t i = 0; i < results.size(); ++i) {
        message m;
        m.id = letterbox::message_id_generator{}();
        m.routing_key = queue;
        m.body = "while blocked " + std::to_string(i);
        t.async_publish(m, [&results, i](std::error_code ec) { results[i] = ec; });
    }
    auto completed = [&] {
        return std::count_if(results.begin(), results.end(),
                             [](const auto& r) { return r.has_value(); });
    };
    // Nothing completes while the alarm lasts: neither a success the broker did not give nor
    // an error (the publishes are not lost, only held).
    CHECK_FALSE(b.f.run_until([&] { return completed() > 0; }, std::chrono::milliseconds{2000}));

    REQUIRE(alarm.lift());
    REQUIRE(b.f.run_until([&] { return completed() == 3; }, b.timeout));
    for (const auto& r : results)
        CHECK(*r == std::error_code{});
    std::optional<std::uint32_t> depth;
    t.async_queue_depth(queue, [&](std::error_code ec, std::uint32_t n) {
        CHECK(!ec);
        depth = n;
    });
    REQUIRE(b.f.run_until([&] { return depth.has_value(); }, b.timeout));
    CHECK(*depth == 3);
    CHECK(b.await([&](auto done) { t.async_close(done); }) == std::error_code{});
}

TEST_CASE("amqp transport: a publish cancelled while its confirm is held reports outcome_unknown, "
          "and a get cancelled while its reply is held gives its message back",
          "[.integration][amqp][disruptive][cancellation]") {
    if (!broker_is_controllable())
        return;
    broker b;
    auto t = b.f.make();
    const auto queue = b.fresh_queue(t, "cancelled");
    // The alarm stops the broker reading from this (publishing) connection: the publish leaves,
    // and neither its confirm nor the get's reply comes until the alarm clears.
    memory_alarm alarm;
    REQUIRE(alarm.raised);

    boost::asio::cancellation_signal publish_signal;
    std::optional<std::error_code> published;
    message m;
    m.id = letterbox::message_id_generator{}();
    m.routing_key = queue;
    m.body = "cancelled while held";
    t.async_publish(m, boost::asio::bind_cancellation_slot(
                           publish_signal.slot(), [&](std::error_code ec) { published = ec; }));
    CHECK_FALSE(
        b.f.run_until([&] { return published.has_value(); }, std::chrono::milliseconds{500}));
    publish_signal.emit(boost::asio::cancellation_type::terminal);
    REQUIRE(b.f.run_until([&] { return published.has_value(); }, b.timeout));
    CHECK(*published == letterbox::errc::outcome_unknown); // never success

    boost::asio::cancellation_signal get_signal;
    std::optional<std::error_code> got;
    t.async_get(queue, boost::asio::bind_cancellation_slot(
                           get_signal.slot(),
                           [&](std::error_code ec, std::optional<delivery>) { got = ec; }));
    CHECK_FALSE(b.f.run_until([&] { return got.has_value(); }, std::chrono::milliseconds{300}));
    get_signal.emit(boost::asio::cancellation_type::terminal);
    REQUIRE(b.f.run_until([&] { return got.has_value(); }, b.timeout));
    CHECK(*got == std::errc::operation_canceled);

    REQUIRE(alarm.lift());
    // The frame had left: the broker has the message, and the late get-ok was given back, so
    // it is ready again (not held by the transport).
    std::optional<std::uint32_t> depth;
    const auto deadline = std::chrono::steady_clock::now() + b.timeout;
    for (int i = 0; i < 200 && std::chrono::steady_clock::now() < deadline && depth != 1u; ++i) {
        depth.reset();
        t.async_queue_depth(queue,
                            [&](std::error_code ec, std::uint32_t n) { depth = ec ? 0u : n; });
        REQUIRE(b.f.run_until([&] { return depth.has_value(); }, b.timeout));
        if (depth != 1u)
            b.f.run_until([] { return false; }, std::chrono::milliseconds{50});
    }
    CHECK(depth == 1u);
    CHECK(b.await([&](auto done) { t.async_close(done); }) == std::error_code{});
}

TEST_CASE("amqp transport: operations cancelled before they start do nothing",
          "[.integration][amqp][cancellation]") {
    broker b;
    auto t = b.f.make();
    const auto queue = b.fresh_queue(t, "not.started");
    auto cancelled_at_once = [&](auto initiate) {
        boost::asio::cancellation_signal signal;
        std::optional<std::error_code> result;
        initiate(boost::asio::bind_cancellation_slot(
            signal.slot(), [&](std::error_code ec, auto&&...) { result = ec; }));
        signal.emit(boost::asio::cancellation_type::terminal);
        REQUIRE(b.f.run_until([&] { return result.has_value(); }, b.timeout));
        return *result;
    };
    const std::error_condition canceled = std::errc::operation_canceled;
    message m;
    m.id = letterbox::message_id_generator{}();
    m.routing_key = queue;
    CHECK(cancelled_at_once([&](auto tok) { t.async_publish(m, tok); }) == canceled);
    letterbox::topology::queue other;
    other.name = b.f.unique_name("never.declared");
    CHECK(cancelled_at_once([&](auto tok) { t.async_declare(other, tok); }) == canceled);
    letterbox::consume_options o;
    o.queue = queue;
    CHECK(cancelled_at_once([&](auto tok) {
              t.async_consume(
                  o, [](delivery) {}, tok);
          }) == canceled);
    CHECK(cancelled_at_once([&](auto tok) { t.async_get(queue, tok); }) == canceled);
    CHECK(cancelled_at_once([&](auto tok) { t.async_queue_depth(queue, tok); }) == canceled);
    letterbox::topology::exchange x;
    x.name = b.f.unique_name("never.declared.x");
    CHECK(cancelled_at_once([&](auto tok) { t.async_declare(x, tok); }) == canceled);
    letterbox::topology::binding bind;
    bind.source = "amq.direct";
    bind.destination = queue;
    bind.routing_key = "never";
    CHECK(cancelled_at_once([&](auto tok) { t.async_bind(bind, tok); }) == canceled);
    CHECK(cancelled_at_once([&](auto tok) { t.async_cancel("no-such-consumer", tok); }) ==
          canceled);
    delivery none;
    CHECK(cancelled_at_once([&](auto tok) { t.async_ack(none, tok); }) == canceled);
    CHECK(cancelled_at_once([&](auto tok) { t.async_nack(none, true, tok); }) == canceled);
    CHECK(cancelled_at_once([&](auto tok) { t.async_reject(none, false, tok); }) == canceled);
    CHECK(cancelled_at_once([&](auto tok) { t.async_close(tok); }) == canceled);

    std::optional<std::uint32_t> depth;
    t.async_queue_depth(queue, [&](std::error_code ec, std::uint32_t n) {
        CHECK_FALSE(ec);
        depth = n;
    });
    REQUIRE(b.f.run_until([&] { return depth.has_value(); }, b.timeout));
    CHECK(*depth == 0); // the publish never ran
    std::optional<std::uint32_t> missing;
    std::error_code missing_ec;
    t.async_queue_depth(other.name, [&](std::error_code ec, std::uint32_t n) {
        missing_ec = ec;
        missing = n;
    });
    REQUIRE(b.f.run_until([&] { return missing.has_value(); }, b.timeout));
    CHECK(missing_ec == letterbox::errc::not_found); // nor the declare
    CHECK(b.await([&](auto done) { t.async_close(done); }) == std::error_code{});
}

TEST_CASE("amqp transport: acks of one turn go out together, and before a close that follows them",
          "[.integration][amqp]") {
    broker b;
    auto t = b.f.make();
    const auto queue = b.fresh_queue(t, "acks");
    for (int i = 0; i < 20; ++i)
        REQUIRE(b.publish(t, queue, "m" + std::to_string(i)) == std::error_code{});

    // Ack all but the first delivery (so no multiple ack may cover it), then the first.
    auto got = std::make_shared<std::vector<delivery>>();
    letterbox::consume_options o;
    o.queue = queue;
    o.prefetch = 20;
    t.async_consume(
        o, [got](delivery d) { got->push_back(std::move(d)); },
        [](std::error_code, std::string) {});
    REQUIRE(b.f.run_until([&] { return got->size() == 20; }, b.timeout));
    auto acked = std::make_shared<int>(0);
    for (std::size_t i = 1; i < got->size(); ++i)
        t.async_ack((*got)[i], [acked](std::error_code ec) {
            CHECK(!ec);
            ++*acked;
        });
    REQUIRE(b.f.run_until([&] { return *acked == 19; }, b.timeout));
    std::optional<std::uint32_t> depth;
    auto other = b.f.make();
    // The last ack is accepted just before the close: it must reach the broker before
    // connection.close (a lost ack would requeue the message).
    t.async_ack(got->front(), [acked](std::error_code ec) {
        CHECK(!ec);
        ++*acked;
    });
    std::optional<std::error_code> closed;
    t.async_close([&](std::error_code ec) { closed = ec; });
    REQUIRE(b.f.run_until([&] { return closed.has_value(); }, b.timeout));
    CHECK(*acked == 20);
    other.async_queue_depth(queue, [&](std::error_code ec, std::uint32_t n) {
        CHECK(!ec);
        depth = n;
    });
    REQUIRE(b.f.run_until([&] { return depth.has_value(); }, b.timeout));
    CHECK(*depth == 0); // every ack, the last one included, reached the broker before the close
    CHECK(b.await([&](auto done) { other.async_close(done); }) == std::error_code{});
}

} // namespace integration_amqp_transport
