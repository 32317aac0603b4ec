// SPDX-License-Identifier: BSL-1.0
// http_server's security model: reads of message bodies need the token (with an opt-out for a
// loopback dashboard), the Host header must name the server or an allowed host (DNS
// rebinding), health stays open to probes, and the options refuse what cannot be served safely:
// an address that is not an IP address, a non-loopback address without a token.

#include <letterbox/ops/http_server.hpp>

#include <letterbox/error.hpp>
#include <letterbox/ops/http_server_options.hpp>

#include "unit/ops/http_test_support.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/field.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace unit_ops_http_server_security {

namespace {

using namespace ops_test;

/// The message of the letterbox::error that `f` throws, or "" when it throws none.
template <class F>
std::string error_of(F f) {
    try {
        f();
    } catch (const letterbox::error& e) {
        return e.what();
    }
    return {};
}

} // namespace

TEST_CASE("http_server: reading message bodies needs the token, other reads do not",
          "[ops][http_server]") {
    fixture f;
    auto server = f.make_server(f.options());
    client c(f, *server);

    for (const auto& target :
         {std::string("/dlq/work.dlq"), std::string("/dlq/work.dlq?reason=poison"),
          "/dlq/work.dlq/messages/" + letterbox::to_string(f.ids[0])}) {
        INFO(target);
        auto none = c.get(target, std::nullopt);
        CHECK(none.status() == 401);
        CHECK(none.res[http::field::www_authenticate] == "Bearer");
        CHECK(none.json()["error"]["code"] == "unauthorized");
        CHECK(none.res.body().find("order") == std::string::npos);
        CHECK(c.get(target, std::string("Bearer wrong")).status() == 401);
        CHECK(c.get(target).status() == 200);
    }
    // Health, the queue list, the outbox rows (no payloads), metrics and the page stay open.
    CHECK(c.get("/health/live", std::nullopt).status() == 200);
    CHECK(c.get("/health", std::nullopt).status() == 200);
    CHECK(c.get("/queues", std::nullopt).status() == 200);
    CHECK(c.get("/outbox", std::nullopt).status() == 200);
    CHECK(c.get("/", std::nullopt).status() == 200);
    CHECK(f.ready(dlq_test::dlq_name) == 5);
}

TEST_CASE("http_server: without a token, reads of message bodies are disabled unless a loopback "
          "dashboard opts out",
          "[ops][http_server]") {
    fixture f;
    SECTION("the default refuses them") {
        auto server = f.make_server(f.options(""));
        client c(f, *server);
        auto r = c.get("/dlq/work.dlq", std::nullopt);
        CHECK(r.status() == 403);
        CHECK(r.json()["error"]["code"] == "reads_disabled");
        CHECK(r.json()["error"]["message"].get<std::string>().find(
                  "loopback_reads_without_token") != std::string::npos);
        CHECK(c.get("/queues", std::nullopt).status() == 200);
    }
    SECTION("loopback_reads_without_token serves them on a loopback address") {
        auto o = f.options("");
        o.loopback_reads_without_token = true;
        auto server = f.make_server(o);
        client c(f, *server);
        auto r = c.get("/dlq/work.dlq", std::nullopt);
        REQUIRE(r.status() == 200);
        CHECK(r.json()["entries"].size() == 5);
        // Mutations still need a token.
        CHECK(c.post("/dlq/work.dlq/replay?all=true", std::string("{}"), std::nullopt).status() ==
              403);
    }
    SECTION("with a token the opt-out still lets token-less reads through") {
        auto o = f.options();
        o.loopback_reads_without_token = true;
        auto server = f.make_server(o);
        client c(f, *server);
        CHECK(c.get("/dlq/work.dlq", std::nullopt).status() == 200);
        CHECK(c.post("/dlq/work.dlq/replay?all=true", std::string("{}"), std::nullopt).status() ==
              401);
    }
}

TEST_CASE("http_server: a Host that names neither this server nor an allowed host is refused",
          "[ops][http_server]") {
    fixture f;
    auto o = f.options();
    o.allowed_hosts = {"ops.internal.example"};
    auto server = f.make_server(o);
    const auto port = std::to_string(server->local_endpoint().port());
    client c(f, *server);

    // DNS rebinding: a page of attacker.example whose name now resolves to 127.0.0.1.
    c.host = "attacker.example:" + port;
    for (const char* target : {"/dlq/work.dlq", "/queues", "/outbox", "/metrics", "/"}) {
        INFO(target);
        auto r = c.get(target);
        CHECK(r.status() == 421);
        CHECK(r.res[http::field::content_type] == "application/json");
        CHECK(r.json()["error"]["code"] == "unknown_host");
        CHECK(r.json()["error"]["message"].get<std::string>().find("allowed_hosts") !=
              std::string::npos);
    }
    auto replay = c.post("/dlq/work.dlq/replay?all=true", std::string("{}"));
    CHECK(replay.status() == 421);
    CHECK(f.ready(dlq_test::dlq_name) == 5);

    // Health answers any Host, so that probes and load balancers keep working.
    CHECK(c.get("/health/live", std::nullopt).status() == 200);
    CHECK(c.get("/health/ready", std::nullopt).status() == 200);

    // The bound address (with or without a port: proxies and port-forwards change it),
    // localhost on a loopback server, and the configured names (in any case) are accepted.
    const std::vector<std::string> accepted{"127.0.0.1:" + port,        "127.0.0.1",
                                            "localhost:" + port,        "LOCALHOST",
                                            "ops.internal.example:443", "OPS.Internal.Example"};
    for (const auto& host : accepted) {
        INFO(host);
        c.host = host;
        CHECK(c.get("/dlq/work.dlq").status() == 200);
    }
    const std::vector<std::string> refused{"127.0.0.2", "[::1]", "internal.example",
                                           "ops.internal.example.attacker.example", ""};
    for (const auto& host : refused) {
        INFO(host);
        c.host = host;
        CHECK(c.get("/queues").status() == 421);
    }
}

TEST_CASE("http_server_options: localhost is 127.0.0.1, other host names are refused naming the "
          "address",
          "[ops][http_server]") {
    fixture f(false);
    auto o = f.options();
    o.address = "localhost";
    http_server s(f.io.get_executor(), o);
    REQUIRE_FALSE(s.listen());
    CHECK(s.local_endpoint().address() == boost::asio::ip::make_address("127.0.0.1"));

    for (const char* address : {"db.internal.example", "127.0.0.1:9464", "", "not an address"}) {
        INFO(address);
        auto bad = f.options();
        bad.address = address;
        const auto message = error_of([&] { http_server refused(f.io.get_executor(), bad); });
        CHECK(message.find("'" + std::string(address) + "'") != std::string::npos);
        CHECK(message.find("http_server_options::address") != std::string::npos);
        CHECK(message.find("127.0.0.1") != std::string::npos);
        CHECK(message.find("localhost") != std::string::npos);
    }
    auto v6 = f.options();
    v6.address = "::1";
    CHECK(error_of([&] { http_server ok(f.io.get_executor(), v6); }).empty());
}

TEST_CASE("http_server_options: a non-loopback address needs a token unless explicitly "
          "overridden, with a warning",
          "[ops][http_server]") {
    fixture f(false);
    // Only constructed, never bound: the tests listen on loopback only.
    auto open = f.options("");
    open.address = "0.0.0.0";
    const auto message = error_of([&] { http_server s(f.io.get_executor(), open); });
    CHECK(message.find("0.0.0.0") != std::string::npos);
    CHECK(message.find("http_server_options::token") != std::string::npos);
    CHECK(message.find("allow_non_loopback_without_token") != std::string::npos);

    auto with_token = f.options();
    with_token.address = "0.0.0.0";
    CHECK(error_of([&] { http_server s(f.io.get_executor(), with_token); }).empty());
    CHECK_FALSE(f.logged("warning"));

    auto overridden = open;
    overridden.allow_non_loopback_without_token = true;
    CHECK(error_of([&] { http_server s(f.io.get_executor(), overridden); }).empty());
    CHECK(f.logged("warning: listening on 0.0.0.0 without a token"));

    // The loopback opt-out for reads means nothing on another address: refused, not ignored.
    auto reads = with_token;
    reads.loopback_reads_without_token = true;
    CHECK(error_of([&] {
              http_server s(f.io.get_executor(), reads);
          }).find("loopback_reads_without_token") != std::string::npos);

    auto loopback = f.options("");
    loopback.address = "127.0.0.1";
    CHECK(error_of([&] { http_server s(f.io.get_executor(), loopback); }).empty());
}

TEST_CASE("http_server_options: the timeouts and bounds that keep the endpoint reachable",
          "[ops][http_server]") {
    const letterbox::ops::http_server_options o;
    CHECK(o.read_timeout == std::chrono::seconds{5});
    CHECK(o.idle_timeout == std::chrono::seconds{5});
    CHECK(o.max_connections == 64);
    CHECK(o.reserved_connections == 4);
    CHECK(o.max_listing_bytes == 1024 * 1024);
    CHECK(o.listing_body_bytes == 4 * 1024);
    CHECK(o.max_response_bytes_in_flight == 32 * 1024 * 1024);
    CHECK(o.store_timeout == std::chrono::seconds{2});
    CHECK(o.allowed_hosts.empty());
    CHECK_FALSE(o.loopback_reads_without_token);
    CHECK_FALSE(o.allow_non_loopback_without_token);
}

} // namespace unit_ops_http_server_security
