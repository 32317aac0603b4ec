// SPDX-License-Identifier: BSL-1.0
// http_server over loopback: every endpoint against the in-memory broker (a dead-letter queue
// holding messages dead-lettered by the broker and by letterbox's headers) and the in-memory
// outbox store, the token rules, and hostile clients (oversized header and body, malformed
// JSON, a slow client). The server and its clients share one io_context, run on the test's
// thread with a real-time deadline for every wait.

#include <letterbox/ops/http_server.hpp>

#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/message.hpp>
#include <letterbox/ops/connection_check.hpp>
#include <letterbox/ops/detail/dashboard_page.hpp>
#include <letterbox/ops/http_server_options.hpp>
#include <letterbox/ops/readiness.hpp>
#include <letterbox/ops/relay_lag_check.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/outbox/relay_counters.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "unit/ops/http_test_support.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <nlohmann/json.hpp>

#include <letterbox/caused_by.hpp>
#include <letterbox/message_trail.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_ops_http_server {

namespace {

using namespace ops_test;

static_assert(letterbox::ops::connection_state_reporter<letterbox::in_memory::transport>);
static_assert(letterbox::ops::relay_counters_source<
              letterbox::outbox_relay<letterbox::in_memory_outbox_store,
                                      letterbox::in_memory::transport, letterbox::virtual_clock>>);

/// A relay stand-in whose lag the test sets.
struct fake_relay {
    letterbox::relay_counters c{};
    letterbox::relay_counters counters() const noexcept { return c; }
};

} // namespace

TEST_CASE("http_server: health, readiness, metrics and the dashboard", "[ops][http_server]") {
    fixture f;
    fake_relay relay;
    auto o = f.options();
    http_server server(f.io.get_executor(), o);
    server.add_readiness_check("transport", letterbox::ops::connection_check(f.transport));
    server.add_readiness_check("outbox_relay_lag", letterbox::ops::relay_lag_check(relay, 60s));
    server.set_metrics([] { return std::string("letterbox_up 1\n"); });
    REQUIRE_FALSE(server.listen());
    client c(f, server);

    auto live = c.get("/health/live");
    CHECK(live.status() == 200);
    CHECK(live.json() == nlohmann::json{{"status", "live"}});

    REQUIRE(f.transport.is_connected());
    auto ready = c.get("/health/ready");
    CHECK(ready.status() == 200);
    CHECK(ready.json()["status"] == "ready");
    REQUIRE(ready.json()["checks"].size() == 2);
    CHECK(ready.json()["checks"][0] ==
          nlohmann::json{{"name", "transport"}, {"ok", true}, {"detail", "connected"}});
    CHECK(c.get("/health").status() == 200);

    SECTION("lag over the threshold makes it not ready") {
        relay.c.lag = 75s;
        auto r = c.get("/health");
        CHECK(r.status() == 503);
        CHECK(r.json()["status"] == "not_ready");
        CHECK(r.json()["checks"][1] ==
              nlohmann::json{{"name", "outbox_relay_lag"},
                             {"ok", false},
                             {"detail", "oldest pending row is 75s old (threshold 60s)"}});
        relay.c.lag = 59s;
        CHECK(c.get("/health/ready").status() == 200);
    }
    SECTION("a closed transport makes it not ready") {
        REQUIRE_FALSE(f.await([&](auto h) { f.transport.async_close(h); }));
        CHECK_FALSE(f.transport.is_connected());
        auto r = c.get("/health/ready");
        CHECK(r.status() == 503);
        CHECK(r.json()["checks"][0]["ok"] == false);
        CHECK(r.json()["checks"][0]["detail"] == "not connected to the broker");
        CHECK(c.get("/health/live").status() == 200);
    }
    SECTION("metrics and the dashboard") {
        auto m = c.get("/metrics");
        CHECK(m.status() == 200);
        CHECK(m.res[http::field::content_type] == "text/plain; version=0.0.4; charset=utf-8");
        CHECK(m.res.body() == "letterbox_up 1\n");
        auto page = c.get("/");
        CHECK(page.status() == 200);
        CHECK(page.res[http::field::content_type] == "text/html; charset=utf-8");
        CHECK(page.res.body() == letterbox::ops::detail::dashboard_page());
        auto missing = c.get("/nothing/here");
        CHECK(missing.status() == 404);
        CHECK(missing.json()["error"]["code"] == "not_found");
        auto wrong_method = c.post("/health", std::string("{}"));
        CHECK(wrong_method.status() == 405);
        CHECK(wrong_method.res[http::field::allow] == "GET");
    }
    CHECK(f.log_lines.size() >= 3);
}

TEST_CASE("http_server: without metrics or an outbox those endpoints are 404",
          "[ops][http_server]") {
    fixture f;
    http_server server(f.io.get_executor(), f.options());
    REQUIRE_FALSE(server.listen());
    client c(f, server);
    auto m = c.get("/metrics");
    CHECK(m.status() == 404);
    CHECK(m.json()["error"]["code"] == "no_metrics");
    CHECK(c.get("/outbox").status() == 404);
    CHECK(c.post("/outbox/0b6f1c2e-6f51-4c1e-9a55-3d8b1f3e2a10/retry", std::string()).status() ==
          404);
    auto q = c.get("/queues");
    CHECK(q.status() == 200);
    CHECK(q.json() == nlohmann::json{{"queues", nlohmann::json::array()}});
    auto health = c.get("/health");
    CHECK(health.status() == 200);
    CHECK(health.json()["checks"].empty());
}

TEST_CASE("http_server: a conversation from the message trail, as messages and a causal tree",
          "[ops][http_server][tracing]") {
    fixture f(false);
    letterbox::message_trail trail;
    letterbox::message_id_generator ids(11);
    letterbox::message placed;
    placed.id = ids();
    placed.type = "order-placed";
    placed.body = "card 4111-1111-1111-1111";
    letterbox::begin_conversation(placed);
    letterbox::message reserve;
    reserve.id = ids();
    reserve.type = "reserve-stock";
    reserve.routing_key = "stock";
    letterbox::caused_by(placed, reserve);
    letterbox::message unrelated;
    unrelated.id = ids();
    unrelated.type = "order-placed";
    letterbox::begin_conversation(unrelated);
    for (const auto* m : {&placed, &reserve, &unrelated})
        trail.record(*m);

    http_server bare(f.io.get_executor(), f.options());
    REQUIRE_FALSE(bare.listen());
    const auto conversation = letterbox::to_string(placed.id);
    {
        client c(f, bare);
        auto none = c.get("/conversations/" + conversation);
        CHECK(none.status() == 404);
        CHECK(none.json()["error"]["code"] == "no_message_trail");
    }

    http_server server(f.io.get_executor(), f.options());
    server.set_message_trail(trail);
    REQUIRE_FALSE(server.listen());
    client c(f, server);
    auto r = c.get("/conversations/" + conversation);
    REQUIRE(r.status() == 200);
    const auto j = r.json();
    CHECK(j["conversation"] == conversation);
    REQUIRE(j["messages"].size() == 2);
    CHECK(j["messages"][1]["type"] == "reserve-stock");
    CHECK(j["messages"][1]["routing_key"] == "stock");
    CHECK(j["messages"][1]["causation_id"] == conversation);
    CHECK(j["messages"][0]["causation_id"].is_null());
    CHECK(j["messages"][0]["traceparent"].is_string());
    CHECK(j["tree"] == "order-placed\n  reserve-stock\n");
    CHECK(j["tree_truncated"] == false);
    CHECK(r.res.body().find("4111") == std::string::npos);                        // never a body
    CHECK(c.get("/conversations/" + conversation, std::nullopt).status() == 200); // metadata

    // The id is read as a UUID, whatever its case; anything else is refused.
    std::string upper = conversation;
    for (auto& ch : upper)
        ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    CHECK(c.get("/conversations/" + upper).json()["messages"].size() == 2);
    auto bad = c.get("/conversations/order-1");
    CHECK(bad.status() == 400);
    CHECK(bad.json()["error"]["code"] == "bad_conversation_id");
    CHECK(c.get("/conversations/" + letterbox::to_string(ids())).json()["messages"].empty());
    CHECK(c.post("/conversations/" + conversation, std::string()).status() == 405);
    CHECK(c.get("/conversations").status() == 404);

    // The tree's text is cut at the listing limit.
    auto small = f.options();
    small.max_listing_bytes = 16;
    http_server limited(f.io.get_executor(), small);
    limited.set_message_trail(trail);
    REQUIRE_FALSE(limited.listen());
    client l(f, limited);
    const auto cut = l.get("/conversations/" + conversation).json();
    CHECK(cut["tree"] == "order-placed\n  r"); // 16 bytes
    CHECK(cut["tree_truncated"] == true);
    CHECK(cut["messages"].size() == 2);
}

TEST_CASE("http_server: queues and browsing a dead-letter queue with filters",
          "[ops][http_server]") {
    fixture f;
    auto server = f.make_server(f.options());
    client c(f, *server);

    auto q = c.get("/queues");
    CHECK(q.status() == 200);
    CHECK(q.json() == nlohmann::json::parse(R"({"queues":[{"queue":"work.dlq","depth":5}]})"));

    auto all = c.get("/dlq/work.dlq");
    REQUIRE(all.status() == 200);
    auto j = all.json();
    CHECK(j["queue"] == "work.dlq");
    CHECK(j["offset"] == 0);
    CHECK(j["limit"] == 100);
    REQUIRE(j["entries"].size() == 5);
    for (std::size_t i = 0; i < 5; ++i)
        CHECK(j["entries"][i]["id"] == letterbox::to_string(f.ids[i]));
    CHECK(j["entries"][0]["reason"] == "rejected");
    CHECK(j["entries"][3]["reason"] == "poison");
    // Browsing leaves the queue as it was.
    CHECK(f.ready(dlq_test::dlq_name) == 5);

    auto poison = c.get("/dlq/work.dlq?reason=poison");
    REQUIRE(poison.status() == 200);
    REQUIRE(poison.json()["entries"].size() == 1);
    CHECK(poison.json()["entries"][0]["id"] == letterbox::to_string(f.ids[3]));

    auto acme = c.get("/dlq/work.dlq?header.x-tenant=acme");
    REQUIRE(acme.status() == 200);
    CHECK(acme.json()["entries"].size() == 2);

    auto by_id = c.get("/dlq/work.dlq?id=" + letterbox::to_string(f.ids[1]) +
                       "&id=" + letterbox::to_string(f.ids[4]));
    REQUIRE(by_id.status() == 200);
    REQUIRE(by_id.json()["entries"].size() == 2);
    CHECK(by_id.json()["entries"][1]["id"] == letterbox::to_string(f.ids[4]));

    auto paged = c.get("/dlq/work.dlq?offset=1&limit=2&message_type=order.placed");
    REQUIRE(paged.status() == 200);
    CHECK(paged.json()["offset"] == 1);
    CHECK(paged.json()["limit"] == 2);
    REQUIRE(paged.json()["entries"].size() == 1);
    CHECK(paged.json()["entries"][0]["id"] == letterbox::to_string(f.ids[2]));

    auto capped = c.get("/dlq/work.dlq?limit=100000");
    CHECK(capped.status() == 200);
    CHECK(capped.json()["limit"] == 1000);

    auto window = c.get("/dlq/work.dlq?since=2000-01-01T00:00:00Z&until=2100-01-01T00:00:00Z");
    CHECK(window.status() == 200);

    SECTION("a bad filter member is 400 naming it") {
        auto bad = c.get("/dlq/work.dlq?colour=red");
        CHECK(bad.status() == 400);
        CHECK(bad.json()["error"]["code"] == "bad_parameter");
        CHECK(bad.json()["error"]["message"].get<std::string>().find("colour") !=
              std::string::npos);
        auto time = c.get("/dlq/work.dlq?since=yesterday");
        CHECK(time.status() == 400);
        CHECK(time.json()["error"]["code"] == "bad_filter");
        CHECK(time.json()["error"]["message"].get<std::string>().find("since") !=
              std::string::npos);
        CHECK(c.get("/dlq/work.dlq?limit=0").status() == 400);
        CHECK(c.get("/dlq/work.dlq?offset=-1").status() == 400);
        CHECK(c.get("/dlq/work.dlq?id=not-a-uuid").status() == 400);
        CHECK(c.get("/dlq/work.dlq?reason=a&reason=b").status() == 400);
        CHECK(c.get("/dlq/work.dlq?reason=%zz").status() == 400);
    }
    SECTION("an unregistered queue is 404") {
        auto unknown = c.get("/dlq/other.dlq");
        CHECK(unknown.status() == 404);
        CHECK(unknown.json()["error"]["code"] == "unknown_queue");
        CHECK(c.post("/dlq/other.dlq/replay", std::string("{}")).status() == 404);
        CHECK(c.del("/dlq/other.dlq?all=true").status() == 404);
    }
    // The connection served every request above.
    CHECK(f.ready(dlq_test::dlq_name) == 5);
}

TEST_CASE("http_server: concurrent scans of one queue run one after the other",
          "[ops][http_server]") {
    fixture f;
    auto server = f.make_server(f.options());
    client a(f, *server);
    client b(f, *server);
    // Both requests are in before either scan ends: a concurrent scan would see the messages
    // the other holds as missing.
    a.send(http::verb::get, "/dlq/work.dlq", {}, bearer);
    b.send(http::verb::get, "/dlq/work.dlq", {}, bearer);
    const auto ra = a.receive();
    const auto rb = b.receive();
    REQUIRE(ra.status() == 200);
    REQUIRE(rb.status() == 200);
    CHECK(ra.json()["entries"].size() == 5);
    CHECK(rb.json()["entries"].size() == 5);
    CHECK(f.ready(dlq_test::dlq_name) == 5);
}

TEST_CASE("http_server: replay and purge need the token, malformed JSON is 400 and the "
          "connection goes on",
          "[ops][http_server]") {
    fixture f;
    auto server = f.make_server(f.options());
    client c(f, *server);

    SECTION("no token and a wrong token are the same 401") {
        auto none = c.post("/dlq/work.dlq/replay", std::string("{}"), std::nullopt);
        auto wrong = c.post("/dlq/work.dlq/replay", std::string("{}"), "Bearer s3cret-T0ken-xyZ");
        auto shorter = c.post("/dlq/work.dlq/replay", std::string("{}"), "Bearer s3cret");
        auto basic = c.del("/dlq/work.dlq?all=true", {}, std::string("Basic ") + token);
        for (const auto* r : {&none, &wrong, &shorter, &basic}) {
            CHECK(r->status() == 401);
            CHECK(r->res[http::field::www_authenticate] == "Bearer");
            CHECK(r->res.body() == none.res.body());
            CHECK(r->json()["error"]["code"] == "unauthorized");
        }
        CHECK(f.ready(dlq_test::dlq_name) == 5);
    }
    SECTION("malformed JSON, an empty body and a bad member are 400") {
        auto bad = c.post("/dlq/work.dlq/replay", std::string("{\"reason\": "));
        CHECK(bad.status() == 400);
        CHECK(bad.res[http::field::content_type] == "application/json");
        CHECK(bad.json()["error"]["code"] == "malformed_json");
        // The same connection serves the next request.
        CHECK(c.get("/health/live").status() == 200);
        auto empty = c.post("/dlq/work.dlq/replay", std::string());
        CHECK(empty.status() == 400);
        CHECK(empty.json()["error"]["code"] == "no_criterion");
        CHECK(empty.json()["error"]["message"].get<std::string>().find("all=true") !=
              std::string::npos);
        auto member = c.post("/dlq/work.dlq/replay", std::string(R"({"colour": "red"})"));
        CHECK(member.status() == 400);
        CHECK(member.json()["error"]["code"] == "bad_filter");
        CHECK(member.json()["error"]["message"].get<std::string>().find("colour") !=
              std::string::npos);
        CHECK(f.ready(dlq_test::dlq_name) == 5);
    }
    SECTION("replay by id puts the message back on its queue") {
        auto r = c.post("/dlq/work.dlq/replay",
                        nlohmann::json{{"ids", {letterbox::to_string(f.ids[3])}}}.dump());
        REQUIRE(r.status() == 200);
        CHECK(r.json()["replayed"] == 1);
        CHECK(r.json()["failed"] == 0);
        CHECK(r.json()["skipped"] == 4);
        CHECK(r.json()["failures"].empty());
        CHECK(f.ready(dlq_test::dlq_name) == 4);
        CHECK(f.ready(dlq_test::work_queue) == 1);
        auto rest = c.get("/dlq/work.dlq");
        CHECK(rest.json()["entries"].size() == 4);
    }
    SECTION("purge needs a criterion or all=true") {
        auto none = c.del("/dlq/work.dlq");
        CHECK(none.status() == 400);
        CHECK(none.json()["error"]["code"] == "no_criterion");
        CHECK(c.del("/dlq/work.dlq", std::string("{}")).status() == 400);
        CHECK(c.del("/dlq/work.dlq?all=maybe").status() == 400);
        CHECK(c.del("/dlq/work.dlq?reason=poison", std::string("{}")).status() == 400);
        auto poison = c.del("/dlq/work.dlq?reason=poison");
        REQUIRE(poison.status() == 200);
        CHECK(poison.json() == nlohmann::json{{"removed", 1}});
        auto acme = c.del("/dlq/work.dlq", std::string(R"({"headers": {"x-tenant": "acme"}})"));
        REQUIRE(acme.status() == 200);
        CHECK(acme.json() == nlohmann::json{{"removed", 2}});
        CHECK(f.ready(dlq_test::dlq_name) == 2);
        auto rest = c.del("/dlq/work.dlq?all=true");
        REQUIRE(rest.status() == 200);
        CHECK(rest.json() == nlohmann::json{{"removed", 2}});
        CHECK(f.ready(dlq_test::dlq_name) == 0);
    }
    for (const auto& text : f.seen)
        CHECK(text.find(token) == std::string::npos);
}

TEST_CASE("http_server: without a configured token mutations are 403", "[ops][http_server]") {
    fixture f;
    auto server = f.make_server(f.options(""));
    client c(f, *server);
    auto replay = c.post("/dlq/work.dlq/replay", std::string("{}"));
    CHECK(replay.status() == 403);
    CHECK(replay.json()["error"]["code"] == "mutations_disabled");
    CHECK(replay.json()["error"]["message"] ==
          "mutations are disabled: set http_server_options::token");
    CHECK(c.del("/dlq/work.dlq?all=true", {}, std::nullopt).status() == 403);
    CHECK(c.post("/outbox/0b6f1c2e-6f51-4c1e-9a55-3d8b1f3e2a10/retry", std::string()).status() ==
          403);
    // Reading message bodies needs the token as well; the rest stays readable.
    CHECK(c.get("/dlq/work.dlq").status() == 403);
    CHECK(c.get("/queues").status() == 200);
    CHECK(f.ready(dlq_test::dlq_name) == 5);
}

TEST_CASE("http_server: the outbox rows, stats and retry of a parked row", "[ops][http_server]") {
    fixture f;
    letterbox::message_id_generator gen{7};
    std::vector<letterbox::message_id> rows;
    {
        letterbox::in_memory_unit_of_work uow;
        for (int i = 0; i < 3; ++i) {
            letterbox::outbox_entry e;
            e.msg.id = gen();
            e.msg.type = "order.created";
            e.msg.exchange = "orders";
            e.msg.routing_key = "created";
            e.aggregate_type = "order";
            e.aggregate_id = std::to_string(i);
            rows.push_back(e.msg.id);
            REQUIRE_FALSE(f.outbox.add(uow, e, f.clock.wall_now()));
        }
        REQUIRE_FALSE(uow.commit());
    }
    REQUIRE_FALSE(f.outbox.park(rows[1], "broker said no"));
    f.clock.advance(std::chrono::seconds{30});
    auto server = f.make_server(f.options());
    client c(f, *server);

    auto all = c.get("/outbox");
    REQUIRE(all.status() == 200);
    auto j = all.json();
    CHECK(j["stats"]["pending"] == 2);
    CHECK(j["stats"]["parked"] == 1);
    CHECK(j["stats"]["leased"] == 0);
    CHECK(j["stats"]["published"] == 0);
    CHECK(j["stats"]["oldest_pending_age_seconds"] == 30.0);
    REQUIRE(j["rows"].size() == 3);
    CHECK(j["rows"][0]["id"] == letterbox::to_string(rows[0]));
    CHECK(j["rows"][1]["status"] == "parked");
    CHECK(j["rows"][1]["last_error"] == "broker said no");
    CHECK(j["rows"][2]["event_type"] == "order.created");
    CHECK(j["rows"][2]["exchange"] == "orders");
    CHECK(j["rows"][2]["routing_key"] == "created");
    CHECK(j["rows"][2]["aggregate_id"] == "2");
    CHECK(j["rows"][0]["sequence"].get<std::uint64_t>() <
          j["rows"][1]["sequence"].get<std::uint64_t>());
    CHECK(j["rows"][0]["created_at"].is_string());

    auto parked = c.get("/outbox?status=parked");
    REQUIRE(parked.json()["rows"].size() == 1);
    CHECK(parked.json()["rows"][0]["id"] == letterbox::to_string(rows[1]));
    const auto first_seq = j["rows"][0]["sequence"].get<std::uint64_t>();
    auto after = c.get("/outbox?after=" + std::to_string(first_seq) + "&limit=1");
    REQUIRE(after.json()["rows"].size() == 1);
    CHECK(after.json()["rows"][0]["id"] == letterbox::to_string(rows[1]));
    CHECK(c.get("/outbox?status=lost").status() == 400);
    CHECK(c.get("/outbox?colour=red").status() == 400);

    auto retry = c.post("/outbox/" + letterbox::to_string(rows[1]) + "/retry", std::string());
    REQUIRE(retry.status() == 200);
    CHECK(retry.json() ==
          nlohmann::json{{"id", letterbox::to_string(rows[1])}, {"status", "pending"}});
    std::error_code ec;
    CHECK(f.outbox.find(rows[1], ec)->status == letterbox::outbox_status::pending);
    auto again = c.post("/outbox/" + letterbox::to_string(rows[1]) + "/retry", std::string());
    CHECK(again.status() == 409);
    CHECK(again.json()["error"]["code"] == "not_parked");
    CHECK(c.post("/outbox/" + letterbox::to_string(gen()) + "/retry", std::string()).status() ==
          404);
    CHECK(c.post("/outbox/not-a-uuid/retry", std::string()).status() == 400);
    CHECK(c.post("/outbox/" + letterbox::to_string(rows[0]) + "/retry", std::string(), std::nullopt)
              .status() == 401);
}

TEST_CASE("http_server: an oversized header is 431 and an oversized body 413",
          "[ops][http_server]") {
    fixture f;
    auto server = f.make_server(f.options());

    const auto big = raw_exchange(
        f, *server,
        "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n");
    CHECK(big.text.starts_with("HTTP/1.1 431"));
    CHECK(big.closed);
    CHECK(body_of(big.text)["error"]["code"] == "header_too_large");

    // Only the headers are sent: the declared length alone is refused.
    const auto huge = raw_exchange(f, *server,
                                   "POST /dlq/work.dlq/replay HTTP/1.1\r\nHost: x\r\n"
                                   "Authorization: Bearer " +
                                       std::string(token) +
                                       "\r\nContent-Type: application/json\r\n"
                                       "Content-Length: 2000000\r\n\r\n{");
    CHECK(huge.text.starts_with("HTTP/1.1 413"));
    CHECK(huge.closed);
    CHECK(body_of(huge.text)["error"]["code"] == "body_too_large");

    const auto garbage = raw_exchange(f, *server, "NOT HTTP AT ALL\r\n\r\n");
    CHECK(garbage.text.starts_with("HTTP/1.1 400"));
    CHECK(garbage.closed);

    // The server still serves.
    client c(f, *server);
    CHECK(c.get("/health/live").status() == 200);
    for (const auto& text : f.seen)
        CHECK(text.find(token) == std::string::npos);
}

TEST_CASE("http_server: a client that sends half a request gets 408 and is closed",
          "[ops][http_server]") {
    fixture f;
    auto o = f.options();
    o.read_timeout = 200ms;
    auto server = f.make_server(o);
    const auto start = std::chrono::steady_clock::now();
    const auto slow = raw_exchange(f, *server, "GET /health HTTP/1.1\r\nHost: x\r\n", 5s);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(slow.closed);
    CHECK(slow.text.starts_with("HTTP/1.1 408"));
    CHECK(body_of(slow.text)["error"]["code"] == "request_timeout");
    CHECK(took >= 200ms);

    // A connection that sends nothing is closed without a response.
    const auto silent = raw_exchange(f, *server, "", 5s);
    CHECK(silent.closed);
    CHECK(silent.text.empty());
}

TEST_CASE("http_server: a connection over max_connections takes an idle one's place, and stop "
          "closes the rest",
          "[ops][http_server]") {
    fixture f;
    auto o = f.options();
    o.max_connections = 1;
    o.reserved_connections = 0;
    auto server = f.make_server(o);
    client idle(f, *server);
    CHECK(idle.get("/health/live").status() == 200);
    const auto served = raw_exchange(
        f, *server, "GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    CHECK(served.closed);
    CHECK(served.text.starts_with("HTTP/1.1 200"));
    CHECK(std::any_of(f.log_lines.begin(), f.log_lines.end(), [](const std::string& l) {
        return l.find("closed an idle connection to make room: max_connections (1)") !=
               std::string::npos;
    }));

    client first(f, *server);
    CHECK(first.get("/health/live").status() == 200);
    const auto port = server->local_endpoint().port();
    server->stop();
    // The open connection is closed by the server.
    std::array<char, 16> byte{};
    std::optional<boost::system::error_code> read;
    first.stream.async_read_some(boost::asio::buffer(byte),
                                 [&](boost::system::error_code ec, std::size_t) { read = ec; });
    REQUIRE(f.run_until([&] { return read.has_value(); }));
    CHECK(*read);
    server.reset();
    // Nothing listens any more.
    tcp::socket sock(f.io);
    std::optional<boost::system::error_code> connected;
    sock.async_connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port),
                       [&](boost::system::error_code ec) { connected = ec; });
    REQUIRE(f.run_until([&] { return connected.has_value(); }));
    CHECK(*connected);
}

TEST_CASE("http_server: registration after listen and a second listen are refused",
          "[ops][http_server]") {
    fixture f;
    auto server = f.make_server(f.options());
    CHECK_THROWS_AS(server->set_metrics([] { return std::string(); }), letterbox::error);
    CHECK_THROWS_AS(server->add_dead_letter_queue(f.transport, "x.dlq"), letterbox::error);
    CHECK(server->listen() == letterbox::errc::invalid_state);

    http_server twice(f.io.get_executor(), f.options());
    twice.add_dead_letter_queue(f.transport, "a.dlq");
    CHECK_THROWS_AS(twice.add_dead_letter_queue(f.transport, "a.dlq"), letterbox::error);

    auto busy = f.options();
    busy.port = server->local_endpoint().port();
    http_server clash(f.io.get_executor(), busy);
    CHECK(clash.listen());
}

} // namespace unit_ops_http_server
