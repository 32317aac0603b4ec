// SPDX-License-Identifier: BSL-1.0
#include <letterbox/message_trail.hpp>

#include <letterbox/causal_tree.hpp>
#include <letterbox/caused_by.hpp>
#include <letterbox/error.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

namespace unit_message_trail {

namespace {

namespace lb = letterbox;

lb::message make(lb::message_id_generator& ids, std::string type) {
    lb::message m;
    m.id = ids();
    m.type = std::move(type);
    m.body = "card 4111-1111-1111-1111";
    return m;
}

} // namespace

TEST_CASE("message_trail keeps the last messages without their bodies, each once",
          "[message_trail][tracing]") {
    lb::message_id_generator ids(5);
    lb::message_trail trail(3);
    std::vector<lb::message> sent;
    for (const auto* type : {"a", "b", "c", "d"})
        sent.push_back(make(ids, type));
    for (const auto& m : sent)
        trail.record(m);
    trail.record(sent[3]); // a republish: kept once

    const auto recent = trail.recent();
    REQUIRE(recent.size() == 3);
    CHECK(recent[0].type == "b"); // "a" went first
    CHECK(recent[2].id == sent[3].id);
    for (const auto& m : recent)
        CHECK(m.body.empty());
    CHECK(trail.size() == 3);
    CHECK(trail.capacity() == 3);

    trail.record(sent[0]); // gone, so recorded again, and "b" goes
    CHECK(trail.recent().front().type == "c");
    lb::message anonymous; // without an id: each one is kept
    anonymous.type = "no-id";
    trail.record(anonymous);
    trail.record(anonymous);
    CHECK(trail.recent().back().type == "no-id");
    CHECK(trail.recent()[1].type == "no-id");
    CHECK_THROWS_AS(lb::message_trail(0), lb::error);
}

TEST_CASE("message_trail gives one conversation, which causal_tree reads",
          "[message_trail][tracing]") {
    lb::message_id_generator ids(6);
    lb::message_trail trail;
    auto placed = make(ids, "order-placed");
    lb::begin_conversation(placed);
    auto reserve = make(ids, "reserve-stock");
    lb::caused_by(placed, reserve);
    auto other = make(ids, "order-placed");
    lb::begin_conversation(other);
    auto reserved = make(ids, "reserve-stock.reply");
    lb::caused_by(reserve, reserved);
    for (const auto* m : {&placed, &reserve, &other, &reserved})
        trail.record(*m);

    const auto conversation = lb::to_string(placed.id);
    const auto mine = trail.conversation(conversation);
    REQUIRE(mine.size() == 3);
    CHECK(lb::to_text(lb::causal_tree(mine, conversation)) == "order-placed\n"
                                                              "  reserve-stock\n"
                                                              "    reserve-stock.reply\n");
    CHECK(trail.conversation("no-such-conversation").empty());
}

TEST_CASE("message_trail's observers record what relays confirm and consumers receive",
          "[message_trail][tracing]") {
    lb::message_id_generator ids(7);
    lb::message_trail trail;
    const auto published = make(ids, "published");
    const auto refused = make(ids, "refused");
    const auto relay = trail.relay_observer();
    lb::outbox_record row;
    row.msg = published;
    relay({.what = lb::relay_event::kind::published, .record = row, .at = {}});
    CHECK(trail.size() == 0); // handed over, not yet confirmed
    relay({.what = lb::relay_event::kind::confirmed, .record = row, .at = {}});
    lb::outbox_record nacked;
    nacked.msg = refused;
    relay({.what = lb::relay_event::kind::nacked, .record = nacked, .at = {}});

    lb::delivery d;
    d.msg = make(ids, "received");
    const auto consumer = trail.consumer_observer();
    consumer({.what = lb::consumer_event::kind::acked, .d = d});
    consumer({.what = lb::consumer_event::kind::delivered, .d = d});

    const auto recent = trail.recent();
    REQUIRE(recent.size() == 2);
    CHECK(recent[0].type == "published");
    CHECK(recent[1].type == "received");
}

TEST_CASE("message_trail is recorded and read from several threads at once",
          "[message_trail][tracing][threads]") {
    lb::message_trail trail(100);
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t)
        writers.emplace_back([&trail, t] {
            lb::message_id_generator ids(static_cast<std::uint64_t>(100 + t));
            for (int i = 0; i < 500; ++i) {
                trail.record(make(ids, "m"));
                (void)trail.conversation("x");
            }
        });
    for (auto& w : writers)
        w.join();
    CHECK(trail.size() == 100);
}

} // namespace unit_message_trail
