// SPDX-License-Identifier: BSL-1.0
// An event store that publishes the events it is told to through the outbox, in the append's
// unit of work: what lands in the outbox, what does not, and what a refused row undoes.

#include <letterbox/event_sourcing/publishing_event_store.hpp>

#include <letterbox/caused_by.hpp>
#include <letterbox/event_sourcing/in_memory_event_store.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/trace_context.hpp>

#include "account.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <system_error>
#include <vector>

namespace unit_event_sourcing_publishing_event_store {

using namespace std::chrono_literals;
namespace lb = letterbox;
using unit_event_sourcing::movement;

namespace {

constexpr lb::store_time t0{std::chrono::sys_days{std::chrono::year{2026} / 12 / 1}};

using store_type =
    lb::publishing_event_store<lb::in_memory_event_store, lb::in_memory_outbox_store>;
static_assert(lb::event_store<store_type>);

struct world {
    lb::in_memory_event_store events;
    lb::in_memory_outbox_store outbox;
    lb::message_id_generator ids{9};
    store_type store{events, outbox,
                     lb::event_publication{.exchange = "accounts",
                                           .stream_prefixes = {"account-"},
                                           .types = {"audited"}}};

    std::vector<lb::outbox_record> rows() {
        std::error_code ec;
        auto all = outbox.list({.status = std::nullopt, .after_sequence = 0, .limit = 1000}, ec);
        REQUIRE_FALSE(ec);
        return all;
    }
};

} // namespace

TEST_CASE("event_publication selects by stream prefix or by type, and nothing by default",
          "[event_sourcing][publishing_event_store]") {
    const lb::event_publication p{
        .exchange = "x", .stream_prefixes = {"account-"}, .types = {"audited"}};
    CHECK(p.publishes("account-1", "deposited"));
    CHECK(p.publishes("ledger", "audited"));
    CHECK_FALSE(p.publishes("ledger", "deposited"));
    CHECK_FALSE(p.publishes("accounts", "deposited"));
    CHECK_FALSE(lb::event_publication{}.publishes("account-1", "deposited"));
}

TEST_CASE("a published event's message carries its id, type, data and causation",
          "[event_sourcing][publishing_event_store]") {
    world w;
    lb::message cause;
    cause.id = w.ids();
    lb::begin_conversation(cause);
    std::vector<lb::event_data> e{movement(w.ids, "deposited", 10),
                                  movement(w.ids, "withdrawn", 4)};
    lb::caused_by(cause, e[0]);
    lb::caused_by(cause, e[1]);
    lb::append_result r;
    auto u = w.store.begin();
    REQUIRE_FALSE(w.store.append(u, "account-1", lb::expected_version::no_stream(), e, t0, r));
    REQUIRE_FALSE(u.commit());
    CHECK(r == lb::append_result{2, 2});

    const auto rows = w.rows();
    REQUIRE(rows.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& m = rows[i].msg;
        CHECK(m.id == e[i].id);
        CHECK(m.type == e[i].type);
        CHECK(m.exchange == "accounts");
        CHECK(m.routing_key == e[i].type);
        CHECK(m.body == e[i].data);
        CHECK(m.properties.content_type == "application/json");
        CHECK(rows[i].aggregate_type == "event-stream");
        CHECK(rows[i].aggregate_id == "account-1");
        // The trace goes on through the event: the message is caused by `cause`.
        CHECK(m.headers.get<std::string>(lb::headers::causation_id) == lb::to_string(cause.id));
        CHECK(m.headers.get<std::string>(lb::headers::conversation_id) == lb::to_string(cause.id));
        const auto trace = lb::trace_context_of(m);
        REQUIRE(trace);
        CHECK(trace->trace_id == lb::trace_context_of(cause)->trace_id);
    }
    // The store reads through.
    std::error_code ec;
    CHECK(w.store.read_stream("account-1", 0, 10, ec).size() == 2);
    CHECK(w.store.stream_version("account-1", ec) == 2);
    CHECK(w.store.head_position(ec) == 2);
    CHECK(w.store.read_all(1, 10, ec).size() == 1);
}

TEST_CASE("events not selected are appended and not published, and a rollback publishes nothing",
          "[event_sourcing][publishing_event_store]") {
    world w;
    lb::append_result r;
    {
        auto u = w.store.begin();
        const std::vector<lb::event_data> e{movement(w.ids, "noted", 1),
                                            movement(w.ids, "audited", 2)};
        REQUIRE_FALSE(w.store.append(u, "ledger", lb::expected_version::any(), e, t0, r));
        REQUIRE_FALSE(u.commit());
    }
    {
        auto u = w.store.begin();
        const std::vector<lb::event_data> e{movement(w.ids, "deposited", 3)};
        REQUIRE_FALSE(w.store.append(u, "account-2", lb::expected_version::any(), e, t0, r));
        REQUIRE_FALSE(u.rollback());
    }
    const auto rows = w.rows();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].msg.type == "audited");
    CHECK(rows[0].aggregate_id == "ledger");
    std::error_code ec;
    CHECK(w.events.head_position(ec) == 2);
}

TEST_CASE("an outbox row refused takes the append's events back, and the unit stays usable",
          "[event_sourcing][publishing_event_store]") {
    world w;
    const auto taken = movement(w.ids, "deposited", 1);
    lb::append_result r;
    {
        auto u = w.store.begin();
        REQUIRE_FALSE(w.store.append(u, "account-1", lb::expected_version::any(),
                                     std::vector<lb::event_data>{taken}, t0, r));
        REQUIRE_FALSE(u.commit());
    }
    auto u = w.store.begin();
    const std::vector<lb::event_data> side{movement(w.ids, "noted", 5)};
    REQUIRE_FALSE(w.store.append(u, "ledger", lb::expected_version::any(), side, t0, r));
    // The same message id again: the outbox refuses its row, so the events are not kept.
    const std::vector<lb::event_data> again{movement(w.ids, "deposited", 2), taken};
    CHECK(w.store.append(u, "account-2", lb::expected_version::any(), again, t0, r) ==
          lb::errc::duplicate_message_id);
    REQUIRE_FALSE(u.commit());
    std::error_code ec;
    CHECK(w.events.stream_version("account-2", ec) == 0);
    CHECK(w.events.stream_version("ledger", ec) == 1); // the unit's other append committed
    CHECK(w.rows().size() == 1);
}

} // namespace unit_event_sourcing_publishing_event_store
