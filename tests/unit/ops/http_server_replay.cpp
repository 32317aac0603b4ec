// SPDX-License-Identifier: BSL-1.0
// POST /dlq/{queue}/replay selects what it replays as DELETE does: a filter in the query string
// or in the body (not both), unknown parameters refused, and no criterion at all only with
// ?all=true. Before, `null` and query parameters such as ?reason=no-such-reason replayed the
// whole queue.

#include <letterbox/ops/http_server.hpp>

#include "unit/ops/http_test_support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace unit_ops_http_server_replay {

namespace {

using namespace ops_test;

constexpr const char* replay = "/dlq/work.dlq/replay";

} // namespace

TEST_CASE("http_server: a replay without a criterion is refused unless it says all=true",
          "[ops][http_server]") {
    fixture f;
    auto server = f.make_server(f.options());
    client c(f, *server);

    for (const char* body :
         {"null", "{}", R"({"ids": []})", R"({"reason": null})", R"({"headers": {}})", ""}) {
        INFO("body: " << body);
        auto r = c.post(replay, std::string(body));
        CHECK(r.status() == 400);
        CHECK(r.json()["error"]["code"] == "no_criterion");
        CHECK(r.json()["error"]["message"].get<std::string>().find("all=true") !=
              std::string::npos);
    }
    CHECK(f.ready(dlq_test::dlq_name) == 5);
    CHECK(f.ready(dlq_test::work_queue) == 0);

    SECTION("all=true replays every message, with or without a body") {
        const std::string body = GENERATE(as<std::string>{}, "", "{}", "null");
        INFO("body: " << body);
        auto r = c.post(std::string(replay) + "?all=true", body);
        REQUIRE(r.status() == 200);
        CHECK(r.json()["replayed"] == 5);
        CHECK(f.ready(dlq_test::dlq_name) == 0);
        CHECK(f.ready(dlq_test::work_queue) == 5);
    }
    SECTION("all=true with a filter replays what the filter selects") {
        auto r = c.post(std::string(replay) + "?all=true", std::string(R"({"reason": "poison"})"));
        REQUIRE(r.status() == 200);
        CHECK(r.json()["replayed"] == 1);
        CHECK(f.ready(dlq_test::dlq_name) == 4);
    }
    SECTION("all=false is no criterion") {
        CHECK(c.post(std::string(replay) + "?all=false", std::string("{}")).status() == 400);
        CHECK(c.post(std::string(replay) + "?all=yes", std::string("{}")).status() == 400);
        CHECK(f.ready(dlq_test::dlq_name) == 5);
    }
}

TEST_CASE("http_server: replay reads its filter from the query string, and refuses unknown "
          "parameters",
          "[ops][http_server]") {
    fixture f;
    auto server = f.make_server(f.options());
    client c(f, *server);

    SECTION("a reason that no message has replays nothing") {
        auto r = c.post(std::string(replay) + "?reason=no-such-reason", std::string());
        REQUIRE(r.status() == 200);
        CHECK(r.json()["replayed"] == 0);
        CHECK(r.json()["skipped"] == 5);
        CHECK(f.ready(dlq_test::dlq_name) == 5);
    }
    SECTION("a filter in the query string and another in the body is ambiguous") {
        auto r = c.post(std::string(replay) + "?reason=no-such-reason", std::string("{}"));
        CHECK(r.status() == 400);
        CHECK(r.json()["error"]["code"] == "ambiguous_filter");
        CHECK(f.ready(dlq_test::dlq_name) == 5);
    }
    SECTION("an unknown parameter is 400 naming it") {
        auto r = c.post(std::string(replay) + "?colour=red", std::string("{}"));
        CHECK(r.status() == 400);
        CHECK(r.json()["error"]["code"] == "bad_parameter");
        CHECK(r.json()["error"]["message"].get<std::string>().find("colour") != std::string::npos);
        CHECK(c.post(std::string(replay) + "?limit=1", std::string("{}")).status() == 400);
        CHECK(c.post(std::string(replay) + "?reason=a&reason=b", std::string()).status() == 400);
        CHECK(c.post(std::string(replay) + "?id=not-a-uuid", std::string()).status() == 400);
        CHECK(f.ready(dlq_test::dlq_name) == 5);
    }
    SECTION("query filters select as the body's do") {
        auto r = c.post(std::string(replay) + "?header.x-tenant=acme", std::string());
        REQUIRE(r.status() == 200);
        CHECK(r.json()["replayed"] == 2);
        auto one =
            c.post(std::string(replay) + "?id=" + letterbox::to_string(f.ids[3]), std::string());
        REQUIRE(one.status() == 200);
        CHECK(one.json()["replayed"] == 1);
        CHECK(f.ready(dlq_test::dlq_name) == 2);
        CHECK(f.ready(dlq_test::work_queue) == 3);
    }
}

} // namespace unit_ops_http_server_replay
