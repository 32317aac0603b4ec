// SPDX-License-Identifier: BSL-1.0
#pragma once

// The PostgreSQL server of the integration tests (LETTERBOX_POSTGRES_URL, which
// tests/tools/postgres.sh exports), and a schema of its own for each test: created by the
// first `database::open` on it, dropped with everything in it when the test ends.

#include <letterbox/postgres/connection.hpp>
#include <letterbox/postgres/database.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>

namespace test_support {

/// LETTERBOX_POSTGRES_URL; fails the test when it is not set.
inline std::string postgres_url() {
    const char* url = std::getenv("LETTERBOX_POSTGRES_URL");
    if (url == nullptr || *url == '\0')
        FAIL("LETTERBOX_POSTGRES_URL is not set: start a server with `export $(tests/tools/"
             "postgres.sh start)` (or run through `tests/tools/postgres.sh run -- ...`) and run "
             "again (docs/testing-with-postgres.md)");
    return url;
}

/// A fresh schema name, `letterbox_test_<16 hex digits>`, dropped (CASCADE) on destruction.
class scratch_schema {
public:
    scratch_schema()
        : name_(make_name()) {}
    scratch_schema(const scratch_schema&) = delete;
    scratch_schema& operator=(const scratch_schema&) = delete;
    ~scratch_schema() {
        std::error_code ec;
        auto c = letterbox::postgres::connection::open(
            postgres_url_or_empty(), std::chrono::seconds(10), "letterbox-test", ec);
        if (!ec)
            (void)c.exec("DROP SCHEMA IF EXISTS " + name_ + " CASCADE");
    }

    const std::string& name() const noexcept { return name_; }

    /// `database_options` naming this schema.
    letterbox::postgres::database_options options() const {
        letterbox::postgres::database_options o;
        o.schema = name_;
        return o;
    }

private:
    static std::string make_name() {
        std::random_device rd;
        std::mt19937_64 gen((std::uint64_t{rd()} << 32) ^ rd());
        static constexpr char hex[] = "0123456789abcdef";
        std::string name = "letterbox_test_";
        auto bits = gen();
        for (int i = 0; i < 16; ++i, bits >>= 4)
            name += hex[bits & 0xf];
        return name;
    }
    static std::string postgres_url_or_empty() {
        const char* url = std::getenv("LETTERBOX_POSTGRES_URL");
        return url ? url : "";
    }

    std::string name_;
};

} // namespace test_support
