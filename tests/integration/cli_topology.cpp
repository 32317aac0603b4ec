// SPDX-License-Identifier: BSL-1.0
// `letterbox topology declare --file` run as a child process against the real broker.

#include <letterbox/message.hpp>
#include <letterbox/testing/temp_directory.hpp>

#include "cli_support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace integration_cli_topology {

namespace {

using namespace cli_test;

std::string write(const letterbox::testing::temp_directory& dir, const std::string& text) {
    const auto path = (dir.path() / "topology.json").string();
    std::ofstream(path) << text;
    return path;
}

} // namespace

TEST_CASE("topology declare creates the exchanges, queues with their retry and dead-letter "
          "queues, and bindings of a file",
          "[integration][cli]") {
    broker b;
    const auto exchange = b.unique_name("cli.orders");
    const auto queue = b.unique_name("cli.billing");
    const nlohmann::json file = {
        {"exchanges", {{{"name", exchange}, {"type", "topic"}, {"auto_delete", true}}}},
        {"queues",
         {{{"name", queue},
           {"expires_ms", 600000},
           {"retry_topology", {{"delays_ms", {1000, 30000}}, {"rejects", "dead_letter_queue"}}}}}},
        {"bindings", {{{"source", exchange}, {"destination", queue}, {"routing_key", "order.*"}}}}};
    letterbox::testing::temp_directory dir;
    const auto path = write(dir, file.dump(2));

    const auto r = run_cli({"topology", "declare", "--file", path, "--json"});
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("queues").size() == 4);
    CHECK(j.at("bindings") == 1);

    for (const auto& q :
         {queue, queue + ".dlq", queue + ".retry.1000ms", queue + ".retry.30000ms"}) {
        INFO(q);
        CHECK_FALSE(b.depth(q).first);
    }
    // The binding routes: a message published to the exchange lands in the queue.
    letterbox::message m;
    m.id = letterbox::message_id_generator{}();
    m.exchange = exchange;
    m.routing_key = "order.placed";
    m.body = "{}";
    b.publish(m);
    CHECK(b.wait_depth(queue, 1));
    CHECK(b.drain(queue).size() == 1);

    // Declaring again is a no-op.
    const auto again = run_cli({"topology", "declare", "--file", path});
    CHECK(again.status == 0);
    CHECK(again.out.find("declared 1 exchange(s), 4 queue(s), 1 binding(s)") != std::string::npos);
}

TEST_CASE("topology declare names the member at fault in a bad file", "[integration][cli]") {
    letterbox::testing::temp_directory dir;
    const auto typo =
        write(dir, R"({"queues": [{"name": "q", "retry_topology": {"delays_ms": [0]}}]})");
    const auto r = run_cli({"topology", "declare", "--file", typo});
    CHECK(r.status == 2);
    CHECK(r.err.find("queues[0].retry_topology.delays_ms[0]") != std::string::npos);

    const auto unknown = write(dir, R"({"exchanges": [{"name": "x", "kind": "topic"}]})");
    const auto u = run_cli({"topology", "declare", "--file", unknown});
    CHECK(u.status == 2);
    CHECK(u.err.find("exchanges[0]: unknown member \"kind\"") != std::string::npos);

    const auto broken = write(dir, R"({"exchanges": [)");
    const auto b = run_cli({"topology", "declare", "--file", broken});
    CHECK(b.status == 2);
    CHECK(b.err.find("not valid JSON") != std::string::npos);

    const auto missing = run_cli({"topology", "declare"});
    CHECK(missing.status == 2);
    CHECK(missing.err.find("--file") != std::string::npos);
}

} // namespace integration_cli_topology
