// SPDX-License-Identifier: BSL-1.0
// Runs the outbox_store and inbox_store conformance suites against the in-memory models.

#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/outbox_store_suite.hpp>

#include <tuple>

namespace {

//[in_memory_outbox_fixture
struct in_memory_outbox_fixture {
    static constexpr letterbox::testing::outbox_store_features features{};

    struct context {
        letterbox::in_memory_outbox_store store_;
        letterbox::in_memory_outbox_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {}; }
};
using in_memory_outbox_fixtures = std::tuple<in_memory_outbox_fixture>;
//]

//[in_memory_inbox_fixture
struct in_memory_inbox_fixture {
    static constexpr letterbox::testing::inbox_store_features features{};

    struct context {
        letterbox::in_memory_inbox_store store_;
        letterbox::in_memory_inbox_store& store() { return store_; }
        letterbox::in_memory_unit_of_work begin() { return {}; }
    };
    static context make() { return {}; }
};
using in_memory_inbox_fixtures = std::tuple<in_memory_inbox_fixture>;
//]

} // namespace

LETTERBOX_OUTBOX_STORE_SUITE(in_memory_outbox_fixtures)
LETTERBOX_INBOX_STORE_SUITE(in_memory_inbox_fixtures)
