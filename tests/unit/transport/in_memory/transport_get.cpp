// SPDX-License-Identifier: BSL-1.0
// in_memory::transport as a queue_reader: async_get and async_queue_depth, and what is specific
// to the model (a channel per queue for gets, the topology channel reopened after a 404, gets
// across lost connections). The contract itself is checked by the conformance suite.

#include <letterbox/transport/in_memory/transport.hpp>

#include <letterbox/error.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace unit_transport_in_memory_transport_get {

static_assert(letterbox::queue_reader<letterbox::in_memory::transport>);

namespace {

using letterbox::errc;

/// A broker on a single-threaded io_context, driven until a condition holds.
struct world : test_support::simulation {
    std::pair<std::error_code, std::optional<letterbox::delivery>>
    get(letterbox::in_memory::transport& t, const std::string& queue) {
        std::optional<std::pair<std::error_code, std::optional<letterbox::delivery>>> result;
        t.async_get(queue, [&](std::error_code ec, std::optional<letterbox::delivery> d) {
            result.emplace(ec, std::move(d));
        });
        REQUIRE(drive_until([&] { return result.has_value(); }));
        return std::move(*result);
    }

    std::pair<std::error_code, std::uint32_t> depth(letterbox::in_memory::transport& t,
                                                    const std::string& queue) {
        std::optional<std::pair<std::error_code, std::uint32_t>> result;
        t.async_queue_depth(queue,
                            [&](std::error_code ec, std::uint32_t n) { result.emplace(ec, n); });
        REQUIRE(drive_until([&] { return result.has_value(); }));
        return *result;
    }

    void declare_queue(letterbox::in_memory::transport& t, const std::string& name) {
        letterbox::topology::queue q;
        q.name = name;
        REQUIRE_FALSE(await([&](auto done) { t.async_declare(q, done); }));
    }

    void publish(letterbox::in_memory::transport& t, const std::string& queue, std::string body) {
        letterbox::message m;
        m.id = ids();
        m.routing_key = queue;
        m.body = std::move(body);
        REQUIRE_FALSE(await([&](auto done) { t.async_publish(m, done); }));
    }

    letterbox::message_id_generator ids{7};
};

} // namespace

TEST_CASE("in_memory::transport models queue_reader", "[transport][in_memory][queue_reader]") {
    STATIC_REQUIRE(letterbox::queue_reader<letterbox::in_memory::transport>);
}

TEST_CASE("a get hands out the head unacknowledged, with the count of what remains",
          "[transport][in_memory][queue_reader]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    w.declare_queue(t, "q");
    w.publish(t, "q", "a");
    w.publish(t, "q", "b");

    auto got = w.get(t, "q");
    REQUIRE_FALSE(got.first);
    const auto& d = got.second;
    REQUIRE(d.has_value());
    CHECK(d->msg.body == "a");
    CHECK(d->queue == "q");
    CHECK(d->consumer_tag.empty());
    CHECK(d->message_count == std::optional<std::uint32_t>(1));
    CHECK(w.broker.queue("q")->ready == 1);
    CHECK(w.broker.queue("q")->unacked == 1);

    REQUIRE_FALSE(w.await([&](auto done) { t.async_ack(*d, done); }));
    CHECK(w.broker.queue("q")->unacked == 0);
    CHECK(w.depth(t, "q") == std::pair<std::error_code, std::uint32_t>({}, 1));
}

TEST_CASE("a failed get or depth on a missing queue leaves what other queues' gets hold",
          "[transport][in_memory][queue_reader]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    w.declare_queue(t, "q");
    w.publish(t, "q", "held");
    auto held = w.get(t, "q");
    REQUIRE(held.second.has_value());

    CHECK(w.get(t, "missing").first == errc::not_found);
    CHECK(w.depth(t, "missing").first == errc::not_found);
    CHECK(w.broker.queue("q")->unacked == 1);

    // The topology channel was closed by the passive declare's 404 and is reopened.
    w.declare_queue(t, "other");
    CHECK(w.depth(t, "other") == std::pair<std::error_code, std::uint32_t>({}, 0));
    REQUIRE_FALSE(w.await([&](auto done) { t.async_nack(*held.second, true, done); }));
    CHECK(w.broker.queue("q")->ready == 1);
    // A get on the failed queue's name works once the queue exists.
    w.declare_queue(t, "missing");
    auto later = w.get(t, "missing");
    CHECK_FALSE(later.first);
    CHECK_FALSE(later.second.has_value());
}

TEST_CASE("gets held when the connection is lost go back to the queue and can't be settled",
          "[transport][in_memory][queue_reader]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    w.declare_queue(t, "q");
    w.publish(t, "q", "a");
    auto first = w.get(t, "q");
    REQUIRE(first.second.has_value());

    w.broker.sever_all();
    REQUIRE(w.drive_until([&] { return w.broker.queue("q")->ready == 1; }));
    CHECK(w.await([&](auto done) { t.async_ack(*first.second, done); }) == errc::channel_closed);

    // The transport reconnected: the message comes again, marked redelivered.
    auto again = w.get(t, "q");
    REQUIRE_FALSE(again.first);
    REQUIRE(again.second.has_value());
    CHECK(again.second->msg.id == first.second->msg.id);
    CHECK(again.second->redelivered);
    REQUIRE_FALSE(w.await([&](auto done) { t.async_ack(*again.second, done); }));
    CHECK(w.broker.queue("q")->total() == 0);
}

TEST_CASE("while the broker is down, get and depth fail with connection_closed",
          "[transport][in_memory][queue_reader]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    w.declare_queue(t, "q");
    w.publish(t, "q", "a");
    w.broker.go_down();
    CHECK(w.get(t, "q").first == errc::connection_closed);
    CHECK(w.depth(t, "q").first == errc::connection_closed);
    w.broker.come_back();
    CHECK(w.depth(t, "q") == std::pair<std::error_code, std::uint32_t>({}, 1));
    CHECK(w.get(t, "q").second.has_value());
}

TEST_CASE("after async_close, get and depth fail with closed",
          "[transport][in_memory][queue_reader]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    w.declare_queue(t, "q");
    w.publish(t, "q", "a");
    REQUIRE(w.get(t, "q").second.has_value());
    REQUIRE_FALSE(w.await([&](auto done) { t.async_close(done); }));
    CHECK(w.broker.queue("q")->ready == 1);
    CHECK(w.get(t, "q").first == errc::closed);
    CHECK(w.depth(t, "q").first == errc::closed);
}

TEST_CASE("async_get and async_queue_depth accept any completion token",
          "[transport][in_memory][queue_reader]") {
    world w;
    letterbox::in_memory::transport t(w.broker);
    w.declare_queue(t, "q");
    w.publish(t, "q", "a");
    // use_future completes on Asio's system executor (another thread): run the broker until
    // it is idle, then wait for the future.
    auto depth = t.async_queue_depth("q", boost::asio::use_future);
    w.drive_until([] { return false; });
    REQUIRE(depth.wait_for(std::chrono::seconds{10}) == std::future_status::ready);
    // The completion is `void(error_code, std::uint32_t)`: use_future delivers the value and
    // would throw the error.
    const std::uint32_t ready = depth.get();
    CHECK(ready == 1);
    auto got = t.async_get("q", boost::asio::use_future);
    w.drive_until([] { return false; });
    REQUIRE(got.wait_for(std::chrono::seconds{10}) == std::future_status::ready);
    const std::optional<letterbox::delivery> d = got.get();
    REQUIRE(d.has_value());
    CHECK(d->msg.body == "a");
}

} // namespace unit_transport_in_memory_transport_get
