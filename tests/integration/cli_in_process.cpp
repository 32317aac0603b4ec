// SPDX-License-Identifier: BSL-1.0
// The `letterbox dlq` and `letterbox topology` commands embedded in-process, over the in-memory
// transport on a virtual clock: what an application that embeds the CLI with its own transport
// does (docs/cli.md).

#include "broker_connection.hpp"
#include "dlq_command.hpp"
#include "topology_command.hpp"

#include <letterbox/testing/temp_directory.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "unit/dlq/dlq_world.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace integration_cli_in_process {

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
    CHECK(cli::redact_secrets("bad broker URL amqp://u:p%40ss@h:5672/v: why") ==
          "bad broker URL amqp://u:***@h:5672/v: why");
    // Quoted input is one unit, spaces and all; an unquoted URL runs on to its '@'.
    CHECK(
        cli::redact_secrets("unexpected argument 'amqp://u:p a s s@h/' for `letterbox dlq list`") ==
        "unexpected argument 'amqp://u:***@h/' for `letterbox dlq list`");
    CHECK(cli::redact_secrets("see amqp://u:p a s s@h/ now") == "see amqp://u:***@h/ now");
    CHECK(cli::redact_secrets("got 'ops:s3 cret@h'") == "got 'ops:***@h'");
    CHECK(cli::redact_secrets("plain words, no URL: 'x' and `y`") ==
          "plain words, no URL: 'x' and `y`");
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

TEST_CASE("dlq purge and replay refuse a filter that has no criterion unless --all is given",
          "[cli]") {
    using strings = std::vector<std::string>;
    for (const std::string command : {"purge", "replay"})
        for (const std::string filter :
             {"{}", R"({"ids":[]})", R"({"reason":null})", R"({"headers":{}})",
              R"({"ids":null,"since":null,"headers":{}})"}) {
            CAPTURE(command, filter);
            CHECK_THROWS_WITH(cli::parse_dlq_arguments(strings{command, "q", "--filter", filter}),
                              Catch::Contains("or --all"));
            const auto all =
                cli::parse_dlq_arguments(strings{command, "q", "--filter", filter, "--all"});
            CHECK_FALSE(all.filtered);
            CHECK(all.all);
        }
    const auto some =
        cli::parse_dlq_arguments(strings{"purge", "q", "--filter", R"({"ids":[],"reason":"x"})"});
    CHECK(some.filtered);
    CHECK(some.filter.reason == "x");

    // Run on a queue: the refused purge never reached it.
    embedded w;
    CHECK_THROWS_AS(w.dlq({"purge", dlq_name, "--filter", R"({"ids":[]})"}), cli::usage_failure);
    CHECK(w.ready(dlq_name) == 3);
    const auto one = w.dlq({"purge", dlq_name, "--filter",
                            R"({"ids":[")" + letterbox::to_string(w.rejected) + R"("]})"});
    CHECK(one.status == cli::ok);
    CHECK(w.ready(dlq_name) == 2);
}

TEST_CASE("dlq show selects its message through the same filter as --id", "[cli]") {
    embedded w;
    const auto id = letterbox::to_string(w.rejected);
    std::string upper = id;
    for (auto& c : upper)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const auto shown = w.dlq({"show", dlq_name, upper, "--json"});
    REQUIRE(shown.status == cli::ok);
    CHECK(nlohmann::json::parse(shown.out).at("id") == id);
}

TEST_CASE("a topology file nested 30,000 levels deep is a usage error naming the depth and the "
          "limit",
          "[cli]") {
    constexpr std::size_t levels = 30'000;
    std::string deep = R"({"exchanges": [{"name": "x", "arguments": {"a": )";
    deep += std::string(levels, '[') + std::string(levels, ']') + "}}]}";
    try {
        (void)cli::parse_topology_text(deep, "deep.json");
        FAIL("accepted");
    } catch (const cli::usage_failure& e) {
        const std::string message = e.what();
        CHECK_THAT(message, Catch::StartsWith("topology file: exchanges[0].arguments.a[0][0]"));
        CHECK_THAT(message, Catch::Contains("deeper than 32 levels"));
        CHECK(message.size() < 400); // the path stops at the limit
    }
    // Tables nest the same way; the limit is the AMQP codec's, counted from the arguments.
    const auto tables = [](std::size_t n) {
        std::string t = R"({"queues": [{"name": "q", "arguments": )";
        for (std::size_t i = 0; i < n; ++i)
            t += R"({"t": )";
        t += "1";
        t += std::string(n, '}') + "}]}";
        return t;
    };
    CHECK_NOTHROW(cli::parse_topology_text(tables(32), "ok.json")); // arguments is one
    std::string path = "queues[0].arguments";
    for (int i = 0; i < 32; ++i)
        path += ".t";
    CHECK_THROWS_WITH(cli::parse_topology_text(tables(33), "deep.json"),
                      Catch::Equals("topology file: " + path +
                                    ": nests tables and arrays deeper than 32 levels, the limit "
                                    "of an AMQP field table"));
    const std::string arrays_ok = R"({"exchanges": [{"name": "x", "arguments": {"a": )" +
                                  std::string(31, '[') + std::string(31, ']') + "}}]}";
    CHECK_NOTHROW(cli::parse_topology_text(arrays_ok, "ok.json"));
}

TEST_CASE("a topology file with a number out of range is a usage error", "[cli]") {
    // Found by topology_file_fuzzer: nlohmann::json throws out_of_range, not parse_error, for
    // it, and the tool reported an internal error.
    CHECK_THROWS_WITH(
        cli::parse_topology_text(R"({"exchanges": [{"name": "x", "arguments": {"n": 1e999}}]})",
                                 "big.json"),
        Catch::Equals(
            "topology file 'big.json' is not valid JSON: it holds a number out of range"));
}

TEST_CASE("text output escapes control characters, ANSI sequences and invalid UTF-8", "[cli]") {
    CHECK(cli::printable("plain text, caf\xc3\xa9") == "plain text, caf\xc3\xa9");
    CHECK(cli::printable("boom\npending: 0") == "boom\\npending: 0");
    CHECK(cli::printable("\x1b[2J\x1b[1;1Hpending: 0\r") == "\\x1b[2J\\x1b[1;1Hpending: 0\\r");
    CHECK(cli::printable("\xc2\x9b"
                         "31m") == "\\u{009b}31m"); // C1 CSI
    CHECK(cli::printable("a\xe2\x80\xae"
                         "b") == "a\\u{202e}b"); // right-to-left override
    CHECK(cli::printable("bad \xff\xc3(") == "bad \\xff\\xc3(");
    CHECK(cli::printable("\xed\xa0\x80") == "\\xed\\xa0\\x80"); // a surrogate
    CHECK(cli::printable("\xe0\x80\x80") == "\\xe0\\x80\\x80"); // overlong
    CHECK(cli::printable(std::string("nul\0byte", 8)) == "nul\\x00byte");
    CHECK(cli::printable("line 1\nline 2\t!", true) == "line 1\nline 2\t!");
    CHECK(cli::json_text(nlohmann::json{{"s", "bad \xff"}}) == "{\"s\":\"bad \xef\xbf\xbd\"}");
}

TEST_CASE("the broker password comes from a password file or the environment, never in a "
          "message",
          "[cli]") {
    letterbox::testing::temp_directory dir;
    const auto file = (dir.path() / "password").string();
    std::ofstream(file) << "fr0m-f1le\n";
    std::map<std::string, std::string> vars;
    const cli::environment env = [&vars](std::string_view name) -> std::optional<std::string> {
        const auto it = vars.find(std::string(name));
        if (it == vars.end())
            return std::nullopt;
        return it->second;
    };
    const std::optional<std::string> none;
    const std::optional<std::string> url = "amqp://ops:in-url@127.0.0.1:5999/";

    CHECK(cli::broker_url(url, none, env).password == "in-url");
    CHECK(cli::broker_url(url, file, env).password == "fr0m-f1le");
    vars["LETTERBOX_AMQP_PASSWORD"] = "fr0m-env";
    CHECK(cli::broker_url(url, none, env).password == "fr0m-env");
    CHECK(cli::broker_url(url, file, env).password == "fr0m-f1le"); // the file wins
    vars["LETTERBOX_AMQP_URL"] = "amqp://ops@127.0.0.1:5998/";
    const auto from_env = cli::broker_url(none, none, env);
    CHECK(from_env.port == 5998);
    CHECK(from_env.user == "ops");
    CHECK(from_env.password == "fr0m-env");
    CHECK(from_env.redacted() == "amqp://ops:***@127.0.0.1:5998/%2F");

    std::ofstream(file + ".crlf") << "w1th-crlf\r\n";
    CHECK(cli::broker_url(url, file + ".crlf", env).password == "w1th-crlf");
    std::ofstream(file + ".empty") << "\n";
    CHECK_THROWS_WITH(cli::broker_url(url, file + ".empty", env), Catch::Contains("is empty"));
    CHECK_THROWS_WITH(cli::broker_url(url, file + ".missing", env),
                      Catch::Contains("cannot read the password file"));
    std::ofstream(file + ".large") << std::string(5000, 'x');
    CHECK_THROWS_WITH(cli::broker_url(url, file + ".large", env),
                      Catch::Contains("larger than 4096 bytes"));

    vars["LETTERBOX_AMQP_URL"] = "amqp://ops:Sup3r+ss/wd==@127.0.0.1:5999/%2F";
    try {
        (void)cli::broker_url(none, none, env);
        FAIL("accepted");
    } catch (const cli::usage_failure& e) {
        const std::string message = e.what();
        CHECK(message.find("Sup3r") == std::string::npos);
        CHECK(message.find("wd==") == std::string::npos);
        CHECK_THAT(message, Catch::Contains("amqp://ops:***@127.0.0.1:5999/%2F"));
        CHECK_THAT(message, Catch::Contains("$LETTERBOX_AMQP_URL"));
    }
}

} // namespace integration_cli_in_process
