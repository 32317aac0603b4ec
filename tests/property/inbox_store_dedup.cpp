// SPDX-License-Identifier: BSL-1.0
// Property: however deliveries are duplicated, reordered and failed, an inbox records each
// (consumer id, message id) once and the effect behind it happens once.

#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/testing/inbox_store_suite.hpp>
#include <letterbox/testing/seed.hpp>

#include <catch2/catch.hpp>

#include <random>

namespace property_inbox_store_dedup {

TEST_CASE("in_memory_inbox_store records each key once under random duplicated, reordered "
          "and failed deliveries",
          "[property][inbox][in_memory_inbox_store]") {
    const auto seed = letterbox::testing::derive_seed(letterbox::testing::test_seed(),
                                                      "property/inbox_store_dedup");
    INFO("derived seed " << seed << " (replay with LETTERBOX_SEED)");
    std::mt19937_64 seeds(seed);
    for (int run = 0; run < 200; ++run) {
        letterbox::in_memory_inbox_store store;
        letterbox::testing::inbox_store_harness<letterbox::in_memory_inbox_store> h{
            store, [] { return letterbox::in_memory_unit_of_work{}; }, {}};
        letterbox::testing::detail::inbox_check_random_deliveries_record_once(h, seeds());
    }
}

} // namespace property_inbox_store_dedup
