// SPDX-License-Identifier: BSL-1.0
// The deterministic simulation's pipeline with the PostgreSQL stores (the integration tier): the
// same application, faults and invariants as tests/property/pipeline_simulation.cpp, with the
// order service's outbox and the ledger service's inbox in schemas of a real server
// (LETTERBOX_POSTGRES_URL). 100 seeds, each run twice (about 45 s); 2,000 with
// LETTERBOX_EXTENDED=1; LETTERBOX_PG_SIM_SEEDS=n runs n.

#include <letterbox/testing/check_pipeline.hpp>

#include "support/postgres_ledger_app.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

namespace integration_postgres_pipeline_simulation {

TEST_CASE("postgres: the pipeline simulation keeps every guarantee on the PostgreSQL stores",
          "[integration][postgres][simulation]") {
    (void)test_support::postgres_url(); // fails here, clearly, without a server
    const char* extended = std::getenv("LETTERBOX_EXTENDED");
    letterbox::testing::pipeline_check_options check;
    check.seeds = extended != nullptr && std::string(extended) == "1" ? 2'000 : 100;
    if (const char* n = std::getenv("LETTERBOX_PG_SIM_SEEDS"))
        check.seeds = std::stoul(n);
    struct drop_schemas_at_end {
        ~drop_schemas_at_end() { test_support::postgres_ledger_app::drop_spare_schemas(); }
    } guard;
    const auto report =
        letterbox::testing::check_pipeline<test_support::postgres_ledger_app>({}, check);
    std::cout << "pipeline simulation on PostgreSQL: " << report.to_string();
    INFO(report.to_string());
    if (std::getenv(letterbox::testing::pipeline_seed_environment_variable) == nullptr) {
        CHECK(report.runs == check.seeds);
        CHECK(report.replays == check.seeds);
        CHECK(report.order_checked_runs * 2 > report.runs);
    }
    REQUIRE(report.ok());
}

} // namespace integration_postgres_pipeline_simulation
