// SPDX-License-Identifier: BSL-1.0
// A publisher outside letterbox (a Node.js `sendToQueue`, an aio-pika `Message`) publishes raw
// AMQP properties; the in-memory broker's channel plays it. What reaches a consumer is the
// message `to_message` makes of those properties, exactly what amqp::transport makes of the
// same publish on RabbitMQ (tests/integration/amqp_differential.cpp, foreign_publishers). And
// what letterbox's transports publish always has an id (message.hpp).

#include <letterbox/transport/in_memory/transport.hpp>

#include "scenario_fixture.hpp"

#include <letterbox/basic_properties.hpp>
#include <letterbox/foreign_message_id.hpp>

#include <boost/asio/executor_work_guard.hpp>

#include <optional>
#include <string>
#include <vector>

namespace unit_transport_in_memory_foreign_publishers {

using namespace broker_scenarios;

namespace {

/// The message a raw publish of `p` to queue "Q" delivers, through the channel and through
/// in_memory::transport.
struct received {
    letterbox::message by_channel;
    letterbox::message by_transport;
};

received publish_raw_and_receive(const letterbox::basic_properties& p, const std::string& body) {
    broker_fixture fx;
    fx.declare_queue("Q");
    REQUIRE_FALSE(fx.ch.basic_publish("", "Q", p, body));
    REQUIRE_FALSE(fx.ch.basic_publish("", "Q", p, body));
    received r;
    auto d = fx.get("Q");
    REQUIRE(d);
    r.by_channel = *d->msg;

    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work(
        fx.io.get_executor());
    letterbox::in_memory::transport t(fx.broker);
    std::optional<letterbox::delivery> got;
    std::optional<std::error_code> done;
    t.async_get("Q", [&](std::error_code ec, std::optional<letterbox::delivery> dv) {
        done = ec;
        got = std::move(dv);
    });
    for (int i = 0; i < 1000 && !done; ++i)
        fx.io.run_one_for(std::chrono::milliseconds{10});
    REQUIRE(done);
    REQUIRE_FALSE(*done);
    REQUIRE(got);
    r.by_transport = got->msg;
    return r;
}

} // namespace

TEST_CASE("a raw publish without a message-id is delivered with the nil id",
          "[transport][in_memory][foreign]") {
    letterbox::basic_properties p; // what amqplib's sendToQueue(q, body) sends
    const auto r = publish_raw_and_receive(p, "bare");
    CHECK(r.by_channel.id.is_nil());
    CHECK(r.by_channel.headers.empty());
    CHECK_FALSE(r.by_channel.properties.persistent); // no delivery-mode: transient
    auto expected = letterbox::to_message(p, "bare");
    expected.routing_key = "Q";
    CHECK(r.by_channel == expected);
    CHECK(r.by_transport == expected);
}

TEST_CASE("a raw publish with a message-id that is no UUID is delivered as the AMQP mapping "
          "reads it",
          "[transport][in_memory][foreign]") {
    const auto text =
        GENERATE(std::string("order-42"), std::string("3F2504E0-4F89-11D3-9A0C-0305E82C3301"));
    INFO(text);
    letterbox::basic_properties p;
    p.message_id = text;
    p.delivery_mode = 2;
    const auto r = publish_raw_and_receive(p, "foreign");
    CHECK(r.by_channel.id == letterbox::foreign_message_id(text));
    CHECK(r.by_channel.headers.get<std::string>(letterbox::foreign_message_id_header) == text);
    CHECK(r.by_transport == r.by_channel);
    // letterbox republishing it (retry, dead-letter, replay) sends the original text again.
    CHECK(letterbox::to_basic_properties(r.by_channel).message_id == text);
}

TEST_CASE("an empty header table and an absent one give the same message",
          "[transport][in_memory][foreign]") {
    letterbox::basic_properties absent;
    absent.message_id = "6f1c2b9e-6d4e-4d7a-9a59-2f3c1e0b7a11";
    auto empty = absent;
    empty.headers = letterbox::field_table{};
    const auto a = publish_raw_and_receive(absent, "x");
    const auto e = publish_raw_and_receive(empty, "x");
    CHECK(a.by_channel == e.by_channel);
    CHECK(a.by_transport == e.by_transport);
    CHECK(letterbox::to_string(a.by_channel.id) == *absent.message_id);
}

TEST_CASE("a headers exchange does not see the headers that only hold a foreign message-id or "
          "cluster-id",
          "[transport][in_memory][foreign]") {
    broker_fixture fx;
    fx.declare_exchange("H", topology::exchange_type::headers);
    fx.declare_queue("by-id");
    fx.bind("by-id", "H", "",
            letterbox::field_table{
                {"x-match", "any-with-x"},
                {std::string(letterbox::foreign_message_id_header), letterbox::field_value{}}});
    letterbox::basic_properties p;
    p.message_id = "order-42";
    REQUIRE_FALSE(fx.ch.basic_publish("H", "", p, "foreign"));
    // A header of that name that is not the message's own foreign id does travel.
    auto m = make_message("H", "", "other id");
    m.id = letterbox::message_id_generator{7}();
    m.headers.set(letterbox::foreign_message_id_header, "order-42");
    REQUIRE_FALSE(fx.ch.basic_publish(m));
    CHECK(fx.drain("by-id") == std::vector<std::string>{"other id"});
}

TEST_CASE("in_memory::transport gives a message with the nil id the broker's next id, and the "
          "channel API does not",
          "[transport][in_memory][message_id]") {
    auto ids_of_a_run = [](std::uint64_t seed) {
        boost::asio::io_context io;
        boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work(
            io.get_executor());
        letterbox::virtual_clock clock;
        in_memory::broker_options options;
        options.message_id_seed = seed;
        in_memory::broker broker(io.get_executor(), clock, options);
        auto conn = broker.connect("setup");
        auto ch = conn.open_channel();
        topology::queue q;
        q.name = "Q";
        REQUIRE_FALSE(ch.queue_declare(q));
        REQUIRE_FALSE(ch.basic_publish(make_message("", "Q", "raw")));

        letterbox::in_memory::transport t(broker);
        int completed = 0;
        for (const char* body : {"first", "second"})
            t.async_publish(make_message("", "Q", body), [&](std::error_code ec) {
                CHECK_FALSE(ec);
                ++completed;
            });
        for (int i = 0; i < 1000 && completed < 2; ++i)
            io.run_one_for(std::chrono::milliseconds{10});
        REQUIRE(completed == 2);
        std::vector<letterbox::message_id> ids;
        for (int i = 0; i < 3; ++i) {
            std::error_code ec;
            auto d = ch.basic_get("Q", ec, true);
            REQUIRE(d);
            ids.push_back(d->msg->id);
        }
        return ids;
    };
    const auto run = ids_of_a_run(1);
    REQUIRE(run.size() == 3);
    CHECK(run[0].is_nil()); // the raw publish
    CHECK_FALSE(run[1].is_nil());
    CHECK_FALSE(run[2].is_nil());
    CHECK(run[1] != run[2]);
    CHECK(ids_of_a_run(1) == run);       // the same seed replays the same ids
    CHECK_FALSE(ids_of_a_run(2) == run); // another seed gives others
}

} // namespace unit_transport_in_memory_foreign_publishers
