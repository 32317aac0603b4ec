// SPDX-License-Identifier: BSL-1.0
#include <letterbox/transport/async_declare_all.hpp>

#include <letterbox/error.hpp>
#include <letterbox/topology/group_partitions.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_transport_async_declare_all {

namespace {

struct world {
    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    letterbox::in_memory::broker broker{io.get_executor(), clock};
    letterbox::in_memory::transport t{broker};

    bool poll_one() {
        io.restart();
        return io.poll_one() != 0;
    }
    void settle() {
        for (int i = 0; i < 100'000 && poll_one(); ++i) {
        }
    }
};

std::vector<letterbox::topology::queue> queues(std::initializer_list<const char*> names) {
    std::vector<letterbox::topology::queue> out;
    for (const auto* n : names) {
        letterbox::topology::queue q;
        q.name = n;
        out.push_back(q);
    }
    return out;
}

} // namespace

TEST_CASE("async_declare_all declares every queue, and an empty list completes posted",
          "[topology][async_declare_all]") {
    world w;
    std::optional<std::error_code> done;
    letterbox::topology::async_declare_all(w.t, queues({"a", "b"}),
                                           [&](std::error_code ec) { done = ec; });
    w.settle();
    REQUIRE(done);
    CHECK_FALSE(*done);
    CHECK(w.broker.queue("a"));
    CHECK(w.broker.queue("b"));

    std::optional<std::error_code> empty;
    letterbox::topology::async_declare_all(w.t, std::vector<letterbox::topology::queue>{},
                                           [&](std::error_code ec) { empty = ec; });
    CHECK_FALSE(empty); // never inside the initiating call
    w.settle();
    REQUIRE(empty);
    CHECK_FALSE(*empty);
}

TEST_CASE("async_declare_all declares exchanges, queues and bindings in their order, and stops "
          "at the first failure",
          "[topology][async_declare_all]") {
    world w;
    const letterbox::topology::group_partitions layout{.name = "orders", .partitions = 3};
    std::optional<std::error_code> done;
    letterbox::topology::async_declare_all(w.t, layout.declarations(),
                                           [&](std::error_code ec) { done = ec; });
    w.settle();
    REQUIRE(done);
    CHECK_FALSE(*done);
    const auto bindings = w.broker.bindings("orders");
    CHECK(bindings.size() == 3);
    for (std::uint32_t i = 0; i < 3; ++i) {
        const auto q = w.broker.queue(layout.partition_name(i));
        REQUIRE(q);
        CHECK(q->type == letterbox::topology::queue_type::quorum);
    }

    // A binding to a missing queue fails (404), and what follows it is not declared.
    std::vector<letterbox::topology::declaration> broken{
        letterbox::topology::binding{
            .source = "orders", .destination = "missing", .routing_key = "1"},
        letterbox::topology::queue{.name = "after"}};
    done.reset();
    letterbox::topology::async_declare_all(w.t, broken, [&](std::error_code ec) { done = ec; });
    w.settle();
    REQUIRE(done);
    CHECK(*done == letterbox::errc::not_found);
    CHECK_FALSE(w.broker.queue("after"));
}

TEST_CASE("async_declare_all cancelled midway declares nothing after the declaration under way",
          "[topology][async_declare_all][cancellation]") {
    world w;
    boost::asio::cancellation_signal signal;
    std::optional<std::error_code> done;
    letterbox::topology::async_declare_all(
        w.t, queues({"a", "b", "c"}),
        boost::asio::bind_cancellation_slot(signal.slot(), [&](std::error_code ec) { done = ec; }));
    for (int i = 0; i < 10'000 && !w.broker.queue("a"); ++i)
        REQUIRE(w.poll_one());
    signal.emit(boost::asio::cancellation_type::partial);
    w.settle();
    REQUIRE(done);
    CHECK(*done == std::errc::operation_canceled);
    CHECK(w.broker.queue("a"));
    CHECK_FALSE(w.broker.queue("c"));
    CHECK_FALSE(signal.slot().has_handler());
}

} // namespace unit_transport_async_declare_all
