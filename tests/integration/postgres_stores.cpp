// SPDX-License-Identifier: BSL-1.0
// Runs the outbox_store and inbox_store conformance suites, unchanged, against the PostgreSQL
// models on the server of LETTERBOX_POSTGRES_URL, each check in a schema of its own.

#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/inbox_store.hpp>
#include <letterbox/postgres/outbox_store.hpp>
#include <letterbox/postgres/unit_of_work.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>

#include "integration/postgres_server.hpp"

#include <memory>
#include <tuple>

namespace integration_postgres_stores {

namespace {

using letterbox::testing::inbox_store_features;
using letterbox::testing::outbox_store_features;

/// A schema with one store. Members are destroyed in reverse order: the store and the database
/// close their connections before the schema is dropped.
template <class Store>
struct postgres_world {
    test_support::scratch_schema schema;
    letterbox::postgres::database db =
        letterbox::postgres::database::open(test_support::postgres_url(), schema.options());
    Store store{db};
};

//[postgres_outbox_fixture
struct postgres_outbox_fixture {
    // A unit that adds an id, or an event of an aggregate, that another open unit holds waits
    // for that unit to end (the unique key, the aggregate's order lock): on one thread that would
    // wait forever. What overlapping units show without conflicting (reads of committed rows
    // only while a unit is open) is checked in postgres_outbox_store.cpp.
    static constexpr outbox_store_features features{.overlapping_units_of_work = false};

    struct context {
        std::unique_ptr<postgres_world<letterbox::postgres::outbox_store>> world;
        letterbox::postgres::outbox_store& store() { return world->store; }
        letterbox::postgres::unit_of_work begin() { return world->db.begin(); }
    };
    static context make() {
        return {std::make_unique<postgres_world<letterbox::postgres::outbox_store>>()};
    }
};
using postgres_outbox_fixtures = std::tuple<postgres_outbox_fixture>;
//]

struct postgres_inbox_fixture {
    // A unit that records a key another open unit holds waits for that unit to end (the
    // primary key decides): on one thread that would wait forever, so the suite checks the race
    // of two units with two threads only.
    static constexpr inbox_store_features features{.overlapping_units_of_work = false};

    struct context {
        std::unique_ptr<postgres_world<letterbox::postgres::inbox_store>> world;
        letterbox::postgres::inbox_store& store() { return world->store; }
        letterbox::postgres::unit_of_work begin() { return world->db.begin(); }
    };
    static context make() {
        return {std::make_unique<postgres_world<letterbox::postgres::inbox_store>>()};
    }
};
using postgres_inbox_fixtures = std::tuple<postgres_inbox_fixture>;

} // namespace

LETTERBOX_OUTBOX_STORE_SUITE(postgres_outbox_fixtures)
LETTERBOX_INBOX_STORE_SUITE(postgres_inbox_fixtures)

} // namespace integration_postgres_stores
