// SPDX-License-Identifier: BSL-1.0
// The `letterbox dlq` and `letterbox topology` commands embedded in-process, over the in-memory
// transport on a virtual clock: what an application that embeds the CLI with its own transport
// does (docs/cli.md).

#include "dlq_command.hpp"
#include "topology_command.hpp"

#include <letterbox/transport/in_memory/in_memory_transport.hpp>

#include "unit/dlq/dlq_world.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace dlq_test;
namespace cli = letterbox::cli;

/// A DLQ with two poison messages and one the broker dead-lettered, and the CLI run on it.
struct embedded : world {
    std::vector<letterbox::message_id> poison;
    letterbox::message_id rejected;

    embedded() {
        fault f;
        f.reason = "poison";
        poison.push_back(dead_letter_explicitly(f));
        rejected = dead_letter_natively();
        poison.push_back(dead_letter_explicitly(f));
    }

    //[cli_embed
    // The event loop: this world runs on a virtual clock, so it is driven (bounded) until the
    // operation completes; the timeout is for real time and does not apply.
    cli::event_loop loop() {
        return [this](const std::function<bool()>& done, std::chrono::milliseconds) {
            return drive_until(done);
        };
    }

    struct result {
        int status;
        std::string out, err;
    };

    result dlq(std::vector<std::string> args) {
        std::ostringstream out, err;
        const auto a = cli::parse_dlq_arguments(args); // throws cli::usage_failure
        const int status = cli::run_dlq(transport, a, out, err, loop());
        return {status, out.str(), err.str()};
    }
    //]
};

} // namespace

TEST_CASE("run_dlq lists, replays and purges over the in-memory transport", "[cli]") {
    embedded w;
    const auto list = w.dlq({"list", dlq_name, "--json"});
    REQUIRE(list.status == cli::ok);
    const auto j = nlohmann::json::parse(list.out);
    REQUIRE(j.at("entries").size() == 3);
    CHECK(j.at("entries")[1].at("id") == letterbox::to_string(w.rejected));

    const auto replay = w.dlq({"replay", dlq_name, "--reason", "poison"});
    REQUIRE(replay.status == cli::ok);
    CHECK(replay.out.find("replayed 2, failed 0, skipped 1") != std::string::npos);
    CHECK(w.ready(work_queue) == 2);
    CHECK(w.ready(dlq_name) == 1);

    const auto purge = w.dlq({"purge", dlq_name, "--all", "--json"});
    REQUIRE(purge.status == cli::ok);
    CHECK(nlohmann::json::parse(purge.out).at("removed") == 1);
    CHECK(w.ready(dlq_name) == 0);
}

TEST_CASE("run_dlq exports JSON lines and reports a missing queue as not found", "[cli]") {
    embedded w;
    const auto exported = w.dlq({"export", dlq_name});
    REQUIRE(exported.status == cli::ok);
    std::istringstream lines(exported.out);
    std::string line;
    std::size_t n = 0;
    while (std::getline(lines, line) && n < 100) {
        CHECK(nlohmann::json::parse(line).contains("reason"));
        ++n;
    }
    CHECK(n == 3);
    CHECK(w.ready(dlq_name) == 3);

    const auto missing = w.dlq({"list", "no.such.dlq"});
    CHECK(missing.status == cli::not_found);
    CHECK(missing.err.find("does not exist") != std::string::npos);
}

TEST_CASE("run_dlq: replaying a message whose original queue is gone is a partial failure",
          "[cli]") {
    embedded w;
    fault lost;
    lost.reason = "lost";
    lost.original_exchange = "no.such.exchange";
    const auto id = w.dead_letter_explicitly(lost);
    const auto r = w.dlq({"replay", dlq_name, "--id", letterbox::to_string(id), "--json"});
    CHECK(r.status == cli::partial);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("failed") == 1);
    CHECK(j.at("failures")[0].at("id") == letterbox::to_string(id));
    CHECK(w.ready(dlq_name) == 4);
}

TEST_CASE("the dlq command line is checked before anything runs", "[cli]") {
    using strings = std::vector<std::string>;
    CHECK_THROWS_AS(cli::parse_dlq_arguments(strings{"purge", "q"}), cli::usage_failure);
    CHECK_THROWS_AS(cli::parse_dlq_arguments(strings{"list"}), cli::usage_failure);
    CHECK_THROWS_AS(cli::parse_dlq_arguments(strings{"show", "q", "not-a-uuid"}),
                    cli::usage_failure);
    CHECK_THROWS_AS(
        cli::parse_dlq_arguments(strings{"list", "q", "--reason", "a", "--filter", "{}"}),
        cli::usage_failure);
    CHECK_THROWS_AS(cli::parse_dlq_arguments(strings{"list", "q", "--header", "novalue"}),
                    cli::usage_failure);
    CHECK_THROWS_AS(cli::parse_dlq_arguments(strings{"list", "q", "--all"}), cli::usage_failure);
    const auto a =
        cli::parse_dlq_arguments(strings{"list", "q", "--header", "x-tenant=acme", "--id",
                                         "0B6F1C2E-0000-4000-8000-000000000001", "--limit=5"});
    CHECK(a.filter.headers ==
          std::vector<std::pair<std::string, std::string>>{{"x-tenant", "acme"}});
    CHECK(a.filter.ids == std::vector<std::string>{"0b6f1c2e-0000-4000-8000-000000000001"});
    CHECK(a.page.limit == 5);
    CHECK(cli::parse_age("older-than", "7d") == std::chrono::hours{24 * 7});
    CHECK(cli::redact_url_text("amqp://u:p%40ss@h:5672/v") == "amqp://u:***@h:5672/v");
}

TEST_CASE("run_topology declares a topology file's entities over the in-memory transport",
          "[cli]") {
    world w;
    const auto plan = cli::parse_topology(nlohmann::json::parse(R"({
        "exchanges": [{"name": "orders", "type": "topic"}],
        "queues": [{"name": "billing", "max_length": 1000,
                    "retry_topology": {"delays_ms": [500], "rejects": "retry_queue"}}],
        "bindings": [{"source": "orders", "destination": "billing", "routing_key": "order.#"}]
    })"));
    REQUIRE(plan.queues.size() == 3);
    CHECK(plan.queues.back().name == "billing");
    CHECK(plan.queues.back().arguments.contains("x-max-length"));
    CHECK(plan.queues.back().arguments.contains("x-dead-letter-exchange"));
    std::ostringstream out, err;
    cli::topology_arguments a;
    const int status =
        cli::run_topology(w.transport, plan, a, out, err,
                          [&w](const std::function<bool()>& done, std::chrono::milliseconds) {
                              return w.drive_until(done);
                          });
    CHECK(status == cli::ok);
    CHECK(w.broker.queue("billing.retry.500ms").has_value());
    CHECK(w.broker.queue("billing.dlq").has_value());

    CHECK_THROWS_WITH(cli::parse_topology(nlohmann::json::parse(
                          R"({"queues": [{"name": "q", "dead_letter_exchange": "",
                               "retry_topology": {"rejects": "dead_letter_queue"}}]})")),
                      Catch::Contains("queues[0].dead_letter_exchange"));
    CHECK_THROWS_WITH(cli::parse_topology(nlohmann::json::parse(R"({"queues": [{"name": 3}]})")),
                      Catch::Contains("queues[0].name: must be a string"));
}
