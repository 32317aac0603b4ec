// SPDX-License-Identifier: BSL-1.0
// The deterministic simulation's pipeline with the PostgreSQL stores (the integration tier): the
// same application, faults and invariants as tests/property/pipeline_simulation.cpp, with the
// order service's outbox and the ledger service's inbox in schemas of a real server
// (LETTERBOX_POSTGRES_URL). 300 seeds in 3 ctest shards of 100, each seed run twice (about 45 s
// a shard under ASan+UBSan); 2,100 with LETTERBOX_EXTENDED=1; LETTERBOX_PG_SIM_SEEDS=n runs n in
// all.

#include <letterbox/testing/check_pipeline.hpp>

#include "support/postgres_ledger_app.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <string>

namespace integration_postgres_pipeline_simulation {

namespace {

/// Runs shard `shard` of `shards` of the tier's seeds: ctest runs the shards side by side, each
/// in schemas of its own.
void run_shard(std::size_t shard, std::size_t shards) {
    (void)test_support::postgres_url(); // fails here, clearly, without a server
    const char* extended = std::getenv("LETTERBOX_EXTENDED");
    std::size_t total = extended != nullptr && std::string(extended) == "1" ? 2'100 : 300;
    if (const char* n = std::getenv("LETTERBOX_PG_SIM_SEEDS"))
        total = std::stoul(n);
    letterbox::testing::pipeline_check_options check;
    check.seeds = total / shards + (shard < total % shards ? 1 : 0);
    check.first = shard * (total / shards) + std::min(shard, total % shards);
    struct drop_schemas_at_end {
        ~drop_schemas_at_end() { test_support::postgres_ledger_app::drop_spare_schemas(); }
    } guard;
    const auto report =
        letterbox::testing::check_pipeline<test_support::postgres_ledger_app>({}, check);
    std::cout << "pipeline simulation on PostgreSQL, shard " << shard + 1 << " of " << shards
              << ": " << report.to_string();
    INFO(report.to_string());
    if (std::getenv(letterbox::testing::pipeline_seed_environment_variable) == nullptr) {
        CHECK(report.runs == check.seeds);
        CHECK(report.replays == check.seeds);
        CHECK(report.order_checked_runs * 2 > report.runs);
    }
    REQUIRE(report.ok());
}

} // namespace

TEST_CASE("postgres: the pipeline simulation, seeds 1/3, keeps every guarantee on the PostgreSQL "
          "stores",
          "[integration][postgres][simulation]") {
    run_shard(0, 3);
}
TEST_CASE("postgres: the pipeline simulation, seeds 2/3, keeps every guarantee on the PostgreSQL "
          "stores",
          "[integration][postgres][simulation]") {
    run_shard(1, 3);
}
TEST_CASE("postgres: the pipeline simulation, seeds 3/3, keeps every guarantee on the PostgreSQL "
          "stores",
          "[integration][postgres][simulation]") {
    run_shard(2, 3);
}

} // namespace integration_postgres_pipeline_simulation
