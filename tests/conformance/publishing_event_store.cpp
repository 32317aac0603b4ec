// SPDX-License-Identifier: BSL-1.0
// Runs the event_store conformance suite against a publishing_event_store over the in-memory
// stores: the decorator that adds outbox rows keeps the event store's contract. It publishes
// the suite's "shared-" streams, whose events have ids of their own (the suite appends some
// other events twice, which an outbox would rightly refuse as duplicate message ids).

#include <letterbox/event_sourcing/in_memory_event_store.hpp>
#include <letterbox/event_sourcing/publishing_event_store.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/testing/event_store_suite.hpp>

#include <catch2/catch.hpp>

#include <memory>
#include <tuple>

namespace conformance_publishing_event_store {

namespace {

struct publishing_event_fixture {
    using store_type = letterbox::publishing_event_store<letterbox::in_memory_event_store,
                                                         letterbox::in_memory_outbox_store>;
    struct stores {
        letterbox::in_memory_event_store events;
        letterbox::in_memory_outbox_store outbox;
        store_type store{events, outbox, {.exchange = "events", .stream_prefixes = {"shared-"}}};
    };
    struct context {
        std::unique_ptr<stores> s;
        store_type& store() { return s->store; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {std::make_unique<stores>()}; }
};
using publishing_event_fixtures = std::tuple<publishing_event_fixture>;

} // namespace

LETTERBOX_EVENT_STORE_SUITE(publishing_event_fixtures)

} // namespace conformance_publishing_event_store
