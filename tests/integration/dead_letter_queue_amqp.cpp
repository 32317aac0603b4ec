// SPDX-License-Identifier: BSL-1.0
// dlq::dead_letter_queue over amqp::transport on a real RabbitMQ (LETTERBOX_AMQP_URL): a scan
// started right after another one gave its messages back sees the whole queue. RabbitMQ
// answers a passive queue.declare ahead of the requeues still in the queue's mailbox, so a
// scan bounded by a depth asked first saw fewer messages (or none: a replay that replayed 0).

#include <letterbox/dlq/dead_letter_queue.hpp>

#include <letterbox/amqp/transport.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/dlq/replay_result.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include "amqp_broker.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace integration_dead_letter_queue_amqp {

namespace {

using namespace std::chrono_literals;

} // namespace

TEST_CASE("dlq over amqp: a scan right after another one sees the whole queue",
          "[.integration][amqp][dlq]") {
    amqp_test::amqp_transport_fixture fx;
    auto t = fx.make();
    letterbox::topology::queue_arguments expiring;
    expiring.expires = std::chrono::minutes{10};
    letterbox::topology::queue dlq;
    dlq.name = fx.unique_name("scan.dlq");
    dlq.arguments = expiring.to_table();
    REQUIRE_FALSE(amqp_test::await(fx, [&](auto h) { t.async_declare(dlq, h); }));
    letterbox::topology::queue work;
    work.name = fx.unique_name("scan.work");
    work.arguments = expiring.to_table();
    REQUIRE_FALSE(amqp_test::await(fx, [&](auto h) { t.async_declare(work, h); }));

    // Three dead letters, as letterbox's dead-letter middleware writes them.
    constexpr std::size_t count = 3;
    letterbox::message_id_generator ids{7};
    for (std::size_t i = 0; i < count; ++i) {
        letterbox::message m;
        m.id = ids();
        m.type = "order.placed";
        m.routing_key = dlq.name;
        m.body = R"({"order":)" + std::to_string(i) + "}";
        m.headers.set(letterbox::headers::death_reason, "handler_failed");
        m.headers.set(letterbox::headers::original_exchange, "");
        m.headers.set(letterbox::headers::original_routing_key, work.name);
        m.headers.set(letterbox::headers::original_queue, work.name);
        REQUIRE_FALSE(amqp_test::await(fx, [&](auto h) { t.async_publish(m, h); }));
    }

    letterbox::dlq::dead_letter_queue queue(t, dlq.name);
    for (int round = 0; round < 100; ++round) {
        INFO("browse " << round);
        std::optional<std::pair<std::error_code, std::vector<letterbox::dlq::dead_letter_entry>>>
            browsed;
        queue.async_browse({}, {}, [&](std::error_code ec, auto entries) {
            browsed.emplace(ec, std::move(entries));
        });
        REQUIRE(fx.run_until([&] { return browsed.has_value(); }, 20s));
        REQUIRE_FALSE(browsed->first);
        REQUIRE(browsed->second.size() == count);
    }

    // And a replay right after the last browse moves all of them.
    std::optional<std::pair<std::error_code, letterbox::dlq::replay_result>> replayed;
    queue.async_replay({}, [&](std::error_code ec, letterbox::dlq::replay_result r) {
        replayed.emplace(ec, std::move(r));
    });
    REQUIRE(fx.run_until([&] { return replayed.has_value(); }, 20s));
    REQUIRE_FALSE(replayed->first);
    CHECK(replayed->second.replayed == count);
    CHECK(replayed->second.failed == 0);

    CHECK_FALSE(amqp_test::await(fx, [&](auto h) { t.async_close(h); }));
}

} // namespace integration_dead_letter_queue_amqp
