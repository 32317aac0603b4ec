// SPDX-License-Identifier: BSL-1.0

// lint::text_report, lint::json_report and lint::exit_status: the findings for people, for
// machines and for CI.

#include <letterbox/lint/report.hpp>

#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/severity.hpp>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace unit_lint_report {

namespace lint = letterbox::lint;
using lint::severity;

namespace {

std::vector<lint::finding> sample() {
    return {{.level = severity::error,
             .code = "LB-DLX-RING",
             .objects = {"queue 'a'", "queue 'b'"},
             .versions = {"3.10"},
             .why = "It loops.",
             .fix = "Break it."},
            {.level = severity::warning,
             .code = "LB-XDEATH-CLIENT",
             .objects = {"consumer of 'a'"},
             .versions = {"3.13.0", "4.0", "4.3"},
             .why = "It counts.",
             .fix = "Count yourself."},
            {.level = severity::info,
             .code = "LB-DLX-NONE",
             .objects = {"queue 'c'"},
             .versions = {"3.10", "3.13.0", "3.13", "4.0", "4.3"},
             .why = "It drops.",
             .fix = "Keep."}};
}

} // namespace

TEST_CASE("text_report writes one block per finding and a summary line", "[lint]") {
    CHECK(lint::text_report(sample()) ==
          "error LB-DLX-RING [3.10] queue 'a', queue 'b'\n"
          "  why: It loops.\n"
          "  fix: Break it.\n"
          "\n"
          "warning LB-XDEATH-CLIENT [3.13.0, 4.0, 4.3] consumer of 'a'\n"
          "  why: It counts.\n"
          "  fix: Count yourself.\n"
          "\n"
          "info LB-DLX-NONE [3.10, 3.13.0, 3.13, 4.0, 4.3] queue 'c'\n"
          "  why: It drops.\n"
          "  fix: Keep.\n"
          "\n"
          "1 error, 1 warning, 1 note\n");
    CHECK(lint::text_report({}) == "0 errors, 0 warnings, 0 notes\n");
}

TEST_CASE("json_report lists every finding with its fields and the counts", "[lint]") {
    const auto j = lint::json_report(sample());
    REQUIRE(j.at("findings").size() == 3);
    const auto& first = j.at("findings").at(0);
    CHECK(first.at("severity") == "error");
    CHECK(first.at("code") == "LB-DLX-RING");
    CHECK(first.at("objects") == nlohmann::json::array({"queue 'a'", "queue 'b'"}));
    CHECK(first.at("versions") == nlohmann::json::array({"3.10"}));
    CHECK(first.at("why") == "It loops.");
    CHECK(first.at("fix") == "Break it.");
    CHECK(j.at("findings").at(2).at("severity") == "info");
    CHECK(j.at("counts") == nlohmann::json{{"error", 1}, {"warning", 1}, {"info", 1}});
    CHECK(lint::json_report({}).at("findings").empty());
}

TEST_CASE("exit_status is 2 with errors, 1 with warnings only and 0 otherwise", "[lint]") {
    auto all = sample();
    CHECK(lint::exit_status(all) == 2);
    all.erase(all.begin());
    CHECK(lint::exit_status(all) == 1);
    all.erase(all.begin());
    CHECK(lint::exit_status(all) == 0); // notes do not fail a build
    CHECK(lint::exit_status({}) == 0);
}

} // namespace unit_lint_report
