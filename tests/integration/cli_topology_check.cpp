// SPDX-License-Identifier: BSL-1.0
// `letterbox topology check` run as a child process on a definitions file exported from the
// test broker (`rabbitmqctl export_definitions`, through tests/tools/rabbitmq.sh), and with
// --url against it.

#include <letterbox/testing/temp_directory.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include "cli_support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace integration_cli_topology_check {

namespace {

using namespace cli_test;
using namespace std::chrono_literals;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
}

/// The codes of the findings of a `--json` report whose objects name one of `names`.
std::multiset<std::string> codes_about(const nlohmann::json& report,
                                       const std::vector<std::string>& names) {
    std::multiset<std::string> out;
    for (const auto& vhost : report.at("vhosts"))
        for (const auto& f : vhost.at("report").at("findings")) {
            bool ours = false;
            for (const auto& o : f.at("objects"))
                for (const auto& n : names)
                    ours = ours || o.get<std::string>().find("'" + n + "'") != std::string::npos;
            if (ours)
                out.insert(f.at("code").get<std::string>());
        }
    return out;
}

} // namespace

TEST_CASE("topology check on a definitions file exported from the broker reports the ring and "
          "the missing dead-letter exchange that were declared, and nothing about a correct "
          "queue",
          "[integration][cli]") {
    const auto script = env("LETTERBOX_RABBITMQ_SCRIPT");
    const auto dir = env("LETTERBOX_RABBITMQ_DIR");
    if (script.empty() || dir.empty()) {
        WARN("skipped: the broker was not started by tests/tools/rabbitmq.sh, so its definitions "
             "cannot be exported with rabbitmqctl");
        return;
    }
    broker b;
    const auto q1 = b.unique_name("lint.ring.q1");
    const auto q2 = b.unique_name("lint.ring.q2");
    const auto q3 = b.unique_name("lint.ring.q3");
    const auto lost = b.unique_name("lint.lost");
    const auto fine = b.unique_name("lint.fine");
    const auto fine_dlq = fine + ".dlq";

    // q1 rejects onto q2; q2 and q3 expire onto the next: reject -> expire -> expire.
    letterbox::topology::queue_arguments a1;
    a1.dead_letter_exchange = "";
    a1.dead_letter_routing_key = q2;
    b.declare(q1, a1);
    letterbox::topology::queue_arguments a2;
    a2.dead_letter_exchange = "";
    a2.dead_letter_routing_key = q3;
    a2.message_ttl = 60s;
    b.declare(q2, a2);
    letterbox::topology::queue_arguments a3;
    a3.dead_letter_exchange = "";
    a3.dead_letter_routing_key = q1;
    a3.message_ttl = 60s;
    b.declare(q3, a3);
    letterbox::topology::queue_arguments missing;
    missing.dead_letter_exchange = b.unique_name("lint.nowhere");
    b.declare(lost, missing);
    b.declare(fine_dlq);
    letterbox::topology::queue_arguments to_dlq;
    to_dlq.dead_letter_exchange = "";
    to_dlq.dead_letter_routing_key = fine_dlq;
    b.declare(fine, to_dlq);

    letterbox::testing::temp_directory tmp;
    const auto file = (tmp.path() / "definitions.json").string();
    const auto export_line = "'" + script + "' export-definitions '" + file + "' '" + dir + "'";
    REQUIRE(std::system(export_line.c_str()) == 0);
    const auto before = read_file(file);
    REQUIRE(before.find("\"rabbit_version\"") != std::string::npos);

    // Text: the profile comes from the export's version (Debian 12: 3.10.8).
    const auto text = run_cli({"topology", "check", file});
    INFO(text.out << text.err);
    CHECK(text.status == 2);
    CHECK(text.out.find("profile 3.10)") != std::string::npos);
    CHECK(text.out.find("error LB-DLX-RING") != std::string::npos);
    // No secret of the export is ever printed (its users' password hashes).
    CHECK(text.out.find("password_hash") == std::string::npos);

    const auto json = run_cli({"topology", "check", "--json", file});
    REQUIRE(json.status == 2);
    const auto report = nlohmann::json::parse(json.out);
    CHECK(report.at("exit_status") == 2);
    CHECK(codes_about(report, {q1, q2, q3}) == std::multiset<std::string>{"LB-DLX-RING"});
    CHECK(codes_about(report, {lost}) == std::multiset<std::string>{"LB-DLX-MISSING"});
    CHECK(codes_about(report, {fine, fine_dlq}).empty());

    // For 4.0 the ring is no trap (no x-death reordering), the missing exchange still is.
    const auto v40 = run_cli({"topology", "check", "--json", "--profile", "4.0", file});
    const auto report40 = nlohmann::json::parse(v40.out);
    CHECK(codes_about(report40, {q1, q2, q3}).empty());
    CHECK(codes_about(report40, {lost}) == std::multiset<std::string>{"LB-DLX-MISSING"});

    // The file it was asked to read is unchanged.
    CHECK(read_file(file) == before);
}

TEST_CASE("topology check --url looks each queue of a file up on the broker, changes nothing, "
          "and reports a queue that is not there",
          "[integration][cli]") {
    broker b;
    const auto present = b.unique_name("lint.present");
    const auto absent = b.unique_name("lint.absent");
    b.declare(present);
    const nlohmann::json topology = {{"queues", {{{"name", present}}, {{"name", absent}}}}};
    letterbox::testing::temp_directory tmp;
    const auto file = (tmp.path() / "topology.json").string();
    std::ofstream(file) << topology.dump(2);

    const auto r = run_cli({"topology", "check", "--json", "--url", b.url, file});
    INFO(r.out << r.err);
    REQUIRE(r.status == 2);
    const auto report = nlohmann::json::parse(r.out);
    CHECK(codes_about(report, {absent}) == std::multiset<std::string>{"LB-QUEUE-ABSENT"});
    CHECK(codes_about(report, {present}).empty());
    // Passive lookups only: the absent queue was not created.
    CHECK(b.depth(absent).first == letterbox::errc::not_found);
    // The password of the URL is never printed.
    CHECK(r.out.find("guest:guest") == std::string::npos);
    CHECK(r.err.find("guest:guest") == std::string::npos);
}

} // namespace integration_cli_topology_check
