// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/database_options.hpp>

#include <catch2/catch.hpp>

#include <chrono>

namespace unit_sqlite_database_options {

TEST_CASE("database_options defaults suit a service on a local disk",
          "[sqlite][database_options]") {
    const letterbox::sqlite::database_options o;
    CHECK(o.busy_timeout == std::chrono::milliseconds(5000));
    CHECK(o.synchronous == letterbox::sqlite::database_options::synchronous_mode::normal);
    CHECK(o.max_busy_retries == 3);
    CHECK(o.busy_retry_base_delay <= o.busy_retry_max_delay);
    CHECK(o.jitter_seed == 0);
    CHECK_FALSE(o.on_busy_retry);
    CHECK(o.pragmas.empty());
    CHECK_FALSE(o.quick_check_on_open);
    CHECK(o.create_if_missing);
    CHECK(o.max_idle_connections > 0);
    CHECK(o.statement_cache_capacity > 0);
}

} // namespace unit_sqlite_database_options
