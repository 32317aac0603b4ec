// SPDX-License-Identifier: BSL-1.0
// Runs the outbox_store, inbox_store, saga_store, event_store, snapshot_store and
// checkpoint_store conformance suites against the SQLite models, each check on a new database
// file in a fresh temporary directory.

#include <letterbox/sqlite/checkpoint_store.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/event_store.hpp>
#include <letterbox/sqlite/inbox_store.hpp>
#include <letterbox/sqlite/outbox_store.hpp>
#include <letterbox/sqlite/saga_store.hpp>
#include <letterbox/sqlite/snapshot_store.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>
#include <letterbox/testing/checkpoint_store_suite.hpp>
#include <letterbox/testing/event_store_suite.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>
#include <letterbox/testing/saga_store_suite.hpp>
#include <letterbox/testing/snapshot_store_suite.hpp>

#include "support/temp_directory.hpp"

#include <memory>
#include <string>
#include <tuple>

namespace conformance_sqlite_stores {

namespace {

using letterbox::testing::checkpoint_store_features;
using letterbox::testing::event_store_features;
using letterbox::testing::inbox_store_features;
using letterbox::testing::outbox_store_features;
using letterbox::testing::saga_store_features;
using letterbox::testing::snapshot_store_features;

using test_support::temp_directory;

/// A database file with both stores. Members are destroyed in reverse order: the stores and
/// the database close the file before the directory is removed.
template <class Store>
struct sqlite_world {
    temp_directory dir;
    letterbox::sqlite::database db = letterbox::sqlite::database::open(dir.file("stores.db"));
    Store store{db};
};

//[sqlite_outbox_fixture
struct sqlite_outbox_fixture {
    // An open unit holds the write lock (BEGIN IMMEDIATE): the store's writes and a second
    // unit on the same thread would wait for it.
    static constexpr outbox_store_features features{.overlapping_units_of_work = false};

    struct context {
        std::unique_ptr<sqlite_world<letterbox::sqlite::outbox_store>> world;
        letterbox::sqlite::outbox_store& store() { return world->store; }
        letterbox::sqlite::unit_of_work begin() { return world->db.begin(); }
    };
    static context make() {
        return {std::make_unique<sqlite_world<letterbox::sqlite::outbox_store>>()};
    }
};
using sqlite_outbox_fixtures = std::tuple<sqlite_outbox_fixture>;
//]

//[sqlite_inbox_fixture
struct sqlite_inbox_fixture {
    static constexpr inbox_store_features features{.overlapping_units_of_work = false};

    struct context {
        std::unique_ptr<sqlite_world<letterbox::sqlite::inbox_store>> world;
        letterbox::sqlite::inbox_store& store() { return world->store; }
        letterbox::sqlite::unit_of_work begin() { return world->db.begin(); }
    };
    static context make() {
        return {std::make_unique<sqlite_world<letterbox::sqlite::inbox_store>>()};
    }
};
using sqlite_inbox_fixtures = std::tuple<sqlite_inbox_fixture>;
//]

struct sqlite_saga_fixture {
    static constexpr saga_store_features features{.overlapping_units_of_work = false};

    struct context {
        std::unique_ptr<sqlite_world<letterbox::sqlite::saga_store>> world;
        letterbox::sqlite::saga_store& store() { return world->store; }
        letterbox::sqlite::unit_of_work begin() { return world->db.begin(); }
    };
    static context make() {
        return {std::make_unique<sqlite_world<letterbox::sqlite::saga_store>>()};
    }
};
using sqlite_saga_fixtures = std::tuple<sqlite_saga_fixture>;

struct sqlite_event_fixture {
    static constexpr event_store_features features{.overlapping_units_of_work = false};

    struct context {
        std::unique_ptr<sqlite_world<letterbox::sqlite::event_store>> world;
        letterbox::sqlite::event_store& store() { return world->store; }
        letterbox::sqlite::unit_of_work begin() { return world->db.begin(); }
    };
    static context make() {
        return {std::make_unique<sqlite_world<letterbox::sqlite::event_store>>()};
    }
};
using sqlite_event_fixtures = std::tuple<sqlite_event_fixture>;

struct sqlite_snapshot_fixture {
    static constexpr snapshot_store_features features{.overlapping_units_of_work = false};

    struct context {
        std::unique_ptr<sqlite_world<letterbox::sqlite::snapshot_store>> world;
        letterbox::sqlite::snapshot_store& store() { return world->store; }
        letterbox::sqlite::unit_of_work begin() { return world->db.begin(); }
    };
    static context make() {
        return {std::make_unique<sqlite_world<letterbox::sqlite::snapshot_store>>()};
    }
};
using sqlite_snapshot_fixtures = std::tuple<sqlite_snapshot_fixture>;

struct sqlite_checkpoint_fixture {
    static constexpr checkpoint_store_features features{.overlapping_units_of_work = false};

    struct context {
        std::unique_ptr<sqlite_world<letterbox::sqlite::checkpoint_store>> world;
        letterbox::sqlite::checkpoint_store& store() { return world->store; }
        letterbox::sqlite::unit_of_work begin() { return world->db.begin(); }
    };
    static context make() {
        return {std::make_unique<sqlite_world<letterbox::sqlite::checkpoint_store>>()};
    }
};
using sqlite_checkpoint_fixtures = std::tuple<sqlite_checkpoint_fixture>;

} // namespace

LETTERBOX_OUTBOX_STORE_SUITE(sqlite_outbox_fixtures)
LETTERBOX_INBOX_STORE_SUITE(sqlite_inbox_fixtures)
LETTERBOX_SAGA_STORE_SUITE(sqlite_saga_fixtures)
LETTERBOX_EVENT_STORE_SUITE(sqlite_event_fixtures)
LETTERBOX_SNAPSHOT_STORE_SUITE(sqlite_snapshot_fixtures)
LETTERBOX_CHECKPOINT_STORE_SUITE(sqlite_checkpoint_fixtures)

} // namespace conformance_sqlite_stores
