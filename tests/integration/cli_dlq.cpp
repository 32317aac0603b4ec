// SPDX-License-Identifier: BSL-1.0
// `letterbox dlq ...` run as a child process against the real broker (LETTERBOX_AMQP_URL): a
// work queue whose dead-letter queue holds messages with mixed reasons, dead-lettered by the
// broker (a reject without requeue: x-death) and explicitly (letterbox's fault headers, as the
// dead-letter middleware writes them).

#include <letterbox/amqp/transport.hpp>
#include <letterbox/basic_properties.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/temp_directory.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include "cli_support.hpp"
#include "differential_world.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace integration_cli_dlq {

namespace {

using namespace cli_test;
namespace headers = letterbox::headers;

/// `<work>` dead-letters into `<work>.dlq`, which holds, in order: two messages the broker
/// dead-lettered (reason "rejected"), two with reason "poison" and one with reason
/// "handler_failed" (explicitly dead-lettered, original queue `<work>`).
struct dlq_world : broker {
    std::string work = unique_name("cli.work");
    std::string dlq = work + ".dlq";
    letterbox::message_id_generator ids;
    std::vector<std::string> rejected, poison, failed;

    dlq_world() {
        declare(dlq);
        letterbox::topology::queue_arguments a;
        a.dead_letter_exchange = "";
        a.dead_letter_routing_key = dlq;
        declare(work, a);
        for (int i = 0; i < 2; ++i)
            rejected.push_back(dead_letter_natively(i));
        for (int i = 0; i < 2; ++i)
            poison.push_back(dead_letter_explicitly("poison", "std::invalid_argument", i));
        failed.push_back(dead_letter_explicitly("handler_failed", "std::runtime_error", 9));
        REQUIRE(wait_depth(dlq, 5));
        REQUIRE(wait_depth(work, 0));
    }

    letterbox::message make(int n) {
        letterbox::message m;
        m.id = ids();
        m.type = "order.placed";
        m.body = R"({"order":)" + std::to_string(n) + "}";
        m.properties.content_type = "application/json";
        return m;
    }

    std::string dead_letter_natively(int n) {
        auto m = make(n);
        m.routing_key = work;
        publish(m);
        REQUIRE(wait_depth(work, 1));
        std::optional<std::pair<std::error_code, std::optional<letterbox::delivery>>> got;
        transport.async_get(work, [&got](std::error_code ec, std::optional<letterbox::delivery> d) {
            got.emplace(ec, std::move(d));
        });
        REQUIRE(run_until([&] { return got.has_value(); }, 20s));
        REQUIRE_FALSE(got->first);
        REQUIRE(got->second.has_value());
        REQUIRE_FALSE(await([&](auto h) { transport.async_reject(*got->second, false, h); }));
        return letterbox::to_string(m.id);
    }

    std::string dead_letter_explicitly(const std::string& reason, const std::string& exception,
                                       int n) {
        auto m = make(n);
        m.routing_key = dlq;
        const auto now = letterbox::detail::format_rfc3339(std::chrono::system_clock::now());
        m.headers.set(headers::death_reason, reason);
        m.headers.set(headers::exception_type, exception);
        m.headers.set(headers::exception_message, "cannot handle order " + std::to_string(n));
        m.headers.set(headers::attempts, std::int64_t{3});
        m.headers.set(headers::first_failure_time, now);
        m.headers.set(headers::last_failure_time, now);
        m.headers.set(headers::dead_lettered_time, now);
        m.headers.set(headers::original_exchange, "");
        m.headers.set(headers::original_routing_key, work);
        m.headers.set(headers::original_queue, work);
        m.headers.set(headers::consumer_id, "billing");
        m.headers.set("x-tenant", n == 9 ? "globex" : "acme");
        publish(m);
        return letterbox::to_string(m.id);
    }

    run_result cli(std::vector<std::string> args) {
        args.insert(args.begin() + 2, dlq);
        return run_cli(args);
    }
};

std::set<std::string> ids_of(const nlohmann::json& entries) {
    std::set<std::string> out;
    for (const auto& e : entries)
        out.insert(e.at("id").get<std::string>());
    return out;
}

std::set<std::string> ids_of(const std::vector<letterbox::message>& ms) {
    std::set<std::string> out;
    for (const auto& m : ms)
        out.insert(letterbox::to_string(m.id));
    return out;
}

std::set<std::string> set_of(std::vector<std::string> a, const std::vector<std::string>& b = {}) {
    a.insert(a.end(), b.begin(), b.end());
    return {a.begin(), a.end()};
}

} // namespace

TEST_CASE("dlq list shows every entry, and --json has the documented shape", "[integration][cli]") {
    dlq_world w;
    const auto human = w.cli({"dlq", "list"});
    CHECK(human.status == 0);
    CHECK(human.out.find("5 entries") != std::string::npos);
    CHECK(human.out.find(w.poison.front()) != std::string::npos);

    const auto json = w.cli({"dlq", "list", "--json"});
    REQUIRE(json.status == 0);
    const auto j = nlohmann::json::parse(json.out);
    CHECK(j.at("queue") == w.dlq);
    CHECK(j.at("depth") == 5);
    CHECK(j.at("offset") == 0);
    CHECK(j.at("limit") == 100);
    REQUIRE(j.at("entries").size() == 5);
    std::vector<std::string> all = w.rejected;
    all.insert(all.end(), w.poison.begin(), w.poison.end());
    all.insert(all.end(), w.failed.begin(), w.failed.end());
    CHECK(ids_of(j.at("entries")) == set_of(all));
    for (const auto& e : j.at("entries")) {
        CHECK(e.contains("reason"));
        CHECK(e.contains("headers"));
        CHECK(e.at("body_encoding") == "utf-8");
    }

    const auto poison = w.cli({"dlq", "list", "--json", "--reason", "poison"});
    REQUIRE(poison.status == 0);
    CHECK(ids_of(nlohmann::json::parse(poison.out).at("entries")) == set_of(w.poison));

    const auto tenant = w.cli({"dlq", "list", "--json", "--header", "x-tenant=globex"});
    REQUIRE(tenant.status == 0);
    CHECK(ids_of(nlohmann::json::parse(tenant.out).at("entries")) == set_of(w.failed));

    const auto paged = w.cli({"dlq", "list", "--json", "--offset", "1", "--limit", "2"});
    REQUIRE(paged.status == 0);
    CHECK(nlohmann::json::parse(paged.out).at("entries").size() == 2);

    // Browsing removed nothing.
    CHECK(w.wait_depth(w.dlq, 5));
}

TEST_CASE("dlq show prints one entry in full, and 4 for an unknown id", "[integration][cli]") {
    dlq_world w;
    const auto shown = w.cli({"dlq", "show", w.poison.front()});
    REQUIRE(shown.status == 0);
    CHECK(shown.out.find(w.poison.front()) != std::string::npos);
    CHECK(shown.out.find("std::invalid_argument") != std::string::npos);
    CHECK(shown.out.find("x-tenant: acme") != std::string::npos);
    CHECK(shown.out.find(R"({"order":0})") != std::string::npos);

    const auto native = w.cli({"dlq", "show", w.rejected.front(), "--json"});
    REQUIRE(native.status == 0);
    const auto j = nlohmann::json::parse(native.out);
    CHECK(j.at("id") == w.rejected.front());
    CHECK(j.at("reason") == "rejected");
    CHECK(j.at("original_queue") == w.work);
    CHECK(j.at("headers").contains("x-death"));

    const auto missing = w.cli({"dlq", "show", "00000000-0000-4000-8000-000000000000"});
    CHECK(missing.status == 4);
    CHECK(missing.err.find("no message with id") != std::string::npos);
}

TEST_CASE("dlq names an entry without a message id by its handle, and acts on that one alone",
          "[integration][cli]") {
    dlq_world w;
    // Two messages of a foreign publisher that sets no message-id (a Node.js sendToQueue), with
    // the same body, which the broker dead-letters: two entries that nothing but their handles
    // tell apart.
    {
        differential::broker_raw_client foreign(w.io(), w.url);
        letterbox::basic_properties p;
        p.content_type = "application/json";
        for (int i = 0; i < 2; ++i)
            REQUIRE(foreign.publish("", w.work, p, R"({"order":77})") == "acked");
    }
    for (std::uint32_t left = 2; left > 0; --left) {
        REQUIRE(w.wait_depth(w.work, left));
        std::optional<std::pair<std::error_code, std::optional<letterbox::delivery>>> got;
        w.transport.async_get(w.work,
                              [&got](std::error_code ec, std::optional<letterbox::delivery> d) {
                                  got.emplace(ec, std::move(d));
                              });
        REQUIRE(w.run_until([&] { return got.has_value(); }, 20s));
        REQUIRE_FALSE(got->first);
        REQUIRE(got->second.has_value());
        CHECK(got->second->msg.id.is_nil());
        REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_reject(*got->second, false, h); }));
    }
    REQUIRE(w.wait_depth(w.dlq, 7));

    const auto listed = w.cli({"dlq", "list", "--json"});
    REQUIRE(listed.status == 0);
    const auto listing = nlohmann::json::parse(listed.out);
    std::vector<std::string> handles;
    for (const auto& e : listing.at("entries"))
        if (e.at("id").is_null())
            handles.push_back(e.at("handle").get<std::string>());
    REQUIRE(handles.size() == 2);
    CHECK(handles[0].starts_with("content-"));
    CHECK(handles[1] == handles[0] + "-2"); // identical copies are numbered in queue order

    const auto human = w.cli({"dlq", "list"});
    REQUIRE(human.status == 0);
    CHECK(human.out.find("ID (OR HANDLE)") != std::string::npos);
    CHECK(human.out.find(handles[0]) != std::string::npos);
    CHECK(human.out.find(handles[1]) != std::string::npos);

    const auto shown = w.cli({"dlq", "show", handles[1]});
    REQUIRE(shown.status == 0);
    CHECK(shown.out.find("handle:               " + handles[1]) != std::string::npos);
    CHECK(shown.out.find("the message has no id") != std::string::npos);

    // The nil id would select every id-less entry: it is refused, and nothing is removed.
    const auto nil = w.cli({"dlq", "purge", "--id", "00000000-0000-0000-0000-000000000000"});
    CHECK(nil.status == 2);
    CHECK(w.wait_depth(w.dlq, 7));

    const auto purged = w.cli({"dlq", "purge", "--id", handles[1], "--json"});
    REQUIRE(purged.status == 0);
    CHECK(nlohmann::json::parse(purged.out).at("removed") == 1);
    REQUIRE(w.wait_depth(w.dlq, 6));

    const auto replayed = w.cli({"dlq", "replay", "--id", handles[0], "--json"});
    REQUIRE(replayed.status == 0);
    CHECK(nlohmann::json::parse(replayed.out).at("replayed") == 1);
    REQUIRE(w.wait_depth(w.work, 1));
    const auto back = w.drain(w.work);
    REQUIRE(back.size() == 1);
    CHECK(back[0].body == R"({"order":77})");
    CHECK(w.wait_depth(w.dlq, 5)); // the five entries with ids are untouched
}

TEST_CASE("dlq replay --reason puts only those back on their original queue",
          "[integration][cli]") {
    dlq_world w;
    const auto r = w.cli({"dlq", "replay", "--reason", "poison", "--json"});
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("replayed") == 2);
    CHECK(j.at("failed") == 0);
    CHECK(j.at("skipped") == 3);
    CHECK(r.err.empty()); // stderr is not a terminal: no progress bar

    REQUIRE(w.wait_depth(w.work, 2));
    CHECK(ids_of(w.drain(w.work)) == set_of(w.poison));
    const auto left = w.cli({"dlq", "list", "--json"});
    REQUIRE(left.status == 0);
    CHECK(ids_of(nlohmann::json::parse(left.out).at("entries")) == set_of(w.rejected, w.failed));
}

TEST_CASE("dlq purge removes only the matching entries and needs a filter or --all",
          "[integration][cli]") {
    dlq_world w;
    const auto refused = w.cli({"dlq", "purge"});
    CHECK(refused.status == 2);
    CHECK(refused.err.find("--all") != std::string::npos);
    CHECK(w.wait_depth(w.dlq, 5));

    const auto r = w.cli({"dlq", "purge", "--reason", "handler_failed"});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("removed 1 message") != std::string::npos);
    REQUIRE(w.wait_depth(w.dlq, 4));
    const auto left = w.cli({"dlq", "list", "--json"});
    REQUIRE(left.status == 0);
    CHECK(ids_of(nlohmann::json::parse(left.out).at("entries")) == set_of(w.rejected, w.poison));

    const auto all = w.cli({"dlq", "purge", "--all", "--json"});
    REQUIRE(all.status == 0);
    CHECK(nlohmann::json::parse(all.out).at("removed") == 4);
    CHECK(w.wait_depth(w.dlq, 0));
}

TEST_CASE("dlq export writes one JSON line per entry and removes nothing", "[integration][cli]") {
    dlq_world w;
    letterbox::testing::temp_directory dir;
    const auto file = (dir.path() / "dlq.jsonl").string();
    const auto r = w.cli({"dlq", "export", "--output", file});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("exported 5 entries") != std::string::npos);
    std::ifstream in(file);
    std::string line;
    std::vector<std::string> all = w.rejected;
    all.insert(all.end(), w.poison.begin(), w.poison.end());
    all.insert(all.end(), w.failed.begin(), w.failed.end());
    std::set<std::string> seen;
    std::size_t lines = 0;
    while (std::getline(in, line) && lines < 100) {
        ++lines;
        const auto j = nlohmann::json::parse(line);
        seen.insert(j.at("id").get<std::string>());
    }
    CHECK(lines == 5);
    CHECK(seen == set_of(all));
    CHECK(w.wait_depth(w.dlq, 5));

    const auto filtered = w.cli({"dlq", "export", "--filter", R"({"reason":"rejected"})"});
    REQUIRE(filtered.status == 0);
    std::istringstream out(filtered.out);
    std::set<std::string> exported;
    while (std::getline(out, line) && exported.size() < 100)
        exported.insert(nlohmann::json::parse(line).at("id").get<std::string>());
    CHECK(exported == set_of(w.rejected));
}

TEST_CASE("dlq: a broker that refuses connections is exit code 3, and no password is printed",
          "[integration][cli]") {
    const auto r =
        run_cli({"dlq", "list", "some.dlq", "--url", "amqp://operator:hunter2secret@127.0.0.1:1/"});
    CHECK(r.status == 3);
    CHECK(r.err.find("cannot connect to amqp://operator:***@127.0.0.1:1/") != std::string::npos);
    CHECK(r.err.find("check --url") != std::string::npos);
    CHECK(r.err.find("hunter2secret") == std::string::npos);
    CHECK(r.out.find("hunter2secret") == std::string::npos);

    const auto env =
        run_cli({"dlq", "list", "some.dlq"},
                {{"LETTERBOX_AMQP_URL", "amqp://operator:hunter2secret@127.0.0.1:1/"}});
    CHECK(env.status == 3);
    CHECK(env.err.find("hunter2secret") == std::string::npos);

    const auto bad = run_cli({"dlq", "list", "q", "--url", "amqp://operator:hunter2secret@h/?x=1"});
    CHECK(bad.status == 2);
    CHECK(bad.err.find("hunter2secret") == std::string::npos);

    const auto none = run_cli({"dlq", "list", "q"}, {{"LETTERBOX_AMQP_URL", ""}});
    CHECK(none.status == 2);
    CHECK(none.err.find("LETTERBOX_AMQP_URL") != std::string::npos);
}

TEST_CASE("dlq: usage errors are exit code 2 and a missing queue is 4", "[integration][cli]") {
    const auto unknown = run_cli({"dlq", "list", "q", "--frobnicate"});
    CHECK(unknown.status == 2);
    CHECK(unknown.err.find("--frobnicate") != std::string::npos);
    const auto bad_time = run_cli({"dlq", "list", "q", "--since", "yesterday"});
    CHECK(bad_time.status == 2);
    CHECK(bad_time.err.find("since") != std::string::npos);
    const auto bad_json = run_cli({"dlq", "list", "q", "--filter", "{\"colour\":1}"});
    CHECK(bad_json.status == 2);
    CHECK(bad_json.err.find("colour") != std::string::npos);
    const auto group = run_cli({"frobnicate"});
    CHECK(group.status == 2);

    const auto help = run_cli({"--help"});
    CHECK(help.status == 0);
    CHECK(help.out.find("exit codes") != std::string::npos);

    broker b;
    const auto missing = run_cli({"dlq", "list", b.unique_name("cli.missing")});
    CHECK(missing.status == 4);
    CHECK(missing.err.find("does not exist") != std::string::npos);
}

} // namespace integration_cli_dlq
