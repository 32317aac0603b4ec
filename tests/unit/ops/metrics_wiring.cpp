// SPDX-License-Identifier: BSL-1.0
// The wiring docs/operations.md shows: letterbox_metrics observing a relay, a consumer and its
// inbox, on the in-memory models and the virtual clock.

#include <letterbox/consumer.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/message.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/ops/letterbox_metrics.hpp>
#include <letterbox/ops/metrics_registry.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "support/prometheus_sample.hpp"
#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <system_error>

namespace unit_ops_metrics_wiring {

using test_support::prometheus_sample;

TEST_CASE("letterbox_metrics: a relay, a consumer and its inbox feed the metrics",
          "[ops][metrics]") {
    using namespace letterbox;
    test_support::simulation sim;
    in_memory::transport transport(sim.broker, "app");
    REQUIRE_FALSE(
        sim.await([&](auto h) { transport.async_declare(topology::queue{"orders"}, h); }));
    in_memory_outbox_store outbox;
    in_memory_inbox_store inbox;
    auto& clock = sim.clock;

    //[wiring
    ops::metrics_registry registry;
    ops::letterbox_metrics metrics(registry);

    relay_options ro;
    ro.on_event = metrics.relay_observer(); // published, confirmed, ..., confirm latency
    outbox_relay relay(outbox, transport, clock, ro);

    auto handler = idempotent([](const message&, in_memory_unit_of_work&) {}, inbox,
                              [] { return in_memory_unit_of_work{}; }, "billing", clock)
                       .on_duplicate(metrics.duplicate_observer()); // deduplicated
    consumer billing(transport, handler, clock,
                     {.consume = {.queue = "orders"},
                      .on_event = metrics.consumer_observer()}); // delivered, acked, ...

    metrics.watch_outbox(outbox, clock); // pending, parked, oldest pending age
    metrics.watch_inbox(inbox);          // inbox records
    metrics.watch_transport(transport);  // channels closed by the consumer timeout
    // GET /metrics serves registry.render()
    //]

    relay.async_run([](std::error_code) {});
    REQUIRE_FALSE(sim.await2<std::string>([&](auto h) { billing.async_start(h); }).first);
    message_id_generator ids(1);
    message m;
    m.routing_key = "orders";
    for (int i = 0; i < 2; ++i) { // two events through the outbox
        in_memory_unit_of_work uow;
        m.id = ids();
        REQUIRE_FALSE(outbox.add(uow, {m, "order", "1"}, clock.wall_now()));
        REQUIRE_FALSE(uow.commit());
    }
    REQUIRE_FALSE(sim.await([&](auto h) { transport.async_publish(m, h); })); // a duplicate
    REQUIRE(sim.drive_until([&] { return billing.stats().acked == 3; }));
    relay.stop();
    sim.run_for(std::chrono::seconds(1));

    const auto text = registry.render();
    CHECK(prometheus_sample(text, "letterbox_published_total") == 2);
    CHECK(prometheus_sample(text, "letterbox_confirmed_total") == 2);
    CHECK(prometheus_sample(text, "letterbox_relay_confirm_latency_seconds_count") == 2);
    CHECK(prometheus_sample(text, "letterbox_delivered_total") == 3);
    CHECK(prometheus_sample(text, "letterbox_acked_total") == 3);
    CHECK(prometheus_sample(text, "letterbox_deduplicated_total") == 1);
    CHECK(prometheus_sample(text, "letterbox_handler_duration_seconds_count") == 3);
    CHECK(prometheus_sample(text, "letterbox_outbox_pending") == 0);
    CHECK(prometheus_sample(text, "letterbox_inbox_records") == 2);
    CHECK(prometheus_sample(text, "letterbox_consumer_timeouts_total") == 0);
}

} // namespace unit_ops_metrics_wiring
