// SPDX-License-Identifier: BSL-1.0
// The memory an http_server spends on dead letters is bounded: a listing pages by bytes as well
// as by count and says where the next page starts, cuts bodies to a preview with a link to the
// whole message (GET /dlq/{queue}/messages/{id}), and the responses in flight across all
// connections stay within a byte budget, so clients that never read get 503 instead of making
// the server hold more. The queues hold large messages (the in-memory broker).

#include <letterbox/ops/http_server.hpp>

#include "unit/ops/http_test_support.hpp"

#include <catch2/catch.hpp>

#include <boost/beast/http/field.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace unit_ops_http_server_listing {

namespace {

using namespace ops_test;

/// A JSON body of exactly `size` bytes: {"n":<n>,"blob":"xxx..."}.
std::string large_body(std::size_t n, std::size_t size) {
    std::string head = R"({"n":)" + std::to_string(n) + R"(,"blob":")";
    std::string body = head + std::string(size - head.size() - 2, 'x') + "\"}";
    REQUIRE(body.size() == size);
    return body;
}

/// Dead-letters `count` messages with bodies of `size` bytes; returns their ids in queue order.
std::vector<letterbox::message_id> fill(fixture& f, std::size_t count, std::size_t size) {
    const auto before = f.ready(dlq_test::dlq_name);
    std::vector<letterbox::message_id> ids;
    for (std::size_t i = 0; i < count; ++i)
        ids.push_back(f.dead_letter_explicitly({}, "blob.stored", large_body(i, size)));
    REQUIRE(f.ready(dlq_test::dlq_name) == before + count);
    return ids;
}

/// How many log lines contain `part`.
std::size_t log_count(const fixture& f, const std::string& part) {
    std::size_t n = 0;
    for (const auto& l : f.log_lines)
        n += l.find(part) != std::string::npos ? 1 : 0;
    return n;
}

} // namespace

TEST_CASE("http_server: a listing of large messages stays under max_listing_bytes, with bodies "
          "cut and linked",
          "[ops][http_server]") {
    fixture f(false);
    constexpr std::size_t count = 40;
    constexpr std::size_t size = 256 * 1024;
    const auto ids = fill(f, count, size);
    auto server = f.make_server(f.options());
    client c(f, *server);

    const letterbox::ops::http_server_options defaults;
    std::vector<std::string> seen_ids;
    std::string handle_of_8th;
    std::size_t offset = 0;
    std::size_t pages = 0;
    // 4 bodies of 256 KiB fill a page; the last page may be empty when the one before ended
    // exactly on the bound.
    for (; pages < count + 2; ++pages) {
        auto r = c.get("/dlq/work.dlq?limit=1000&offset=" + std::to_string(offset));
        REQUIRE(r.status() == 200);
        INFO("page " << pages << " at offset " << offset << ": " << r.res.body().size()
                     << " bytes");
        CHECK(r.res.body().size() <= defaults.max_listing_bytes);
        const auto j = r.json();
        CHECK(j["offset"] == offset);
        for (const auto& e : j["entries"]) {
            seen_ids.push_back(e["id"].get<std::string>());
            CHECK(e["body_truncated"] == true);
            CHECK(e["body_bytes"] == size);
            CHECK(e["body_encoding"] == "utf-8");
            CHECK(e["body"].get<std::string>().size() == defaults.listing_body_bytes);
            // The link names the entry by its handle, which names that one entry.
            CHECK(e["message_url"] == "/dlq/work.dlq/messages/" + e["handle"].get<std::string>());
            if (seen_ids.size() == 8)
                handle_of_8th = e["handle"].get<std::string>();
        }
        if (j["next_offset"].is_null())
            break;
        CHECK(j["next_offset"] == offset + j["entries"].size());
        offset = j["next_offset"].get<std::size_t>();
    }
    CHECK(pages > 1); // 10 MiB of bodies do not fit in one page
    REQUIRE(seen_ids.size() == count);
    for (std::size_t i = 0; i < count; ++i)
        CHECK(seen_ids[i] == letterbox::to_string(ids[i]));

    // The link gives the whole message.
    auto whole = c.get("/dlq/work.dlq/messages/" + letterbox::to_string(ids[7]));
    REQUIRE(whole.status() == 200);
    CHECK(whole.json()["id"] == letterbox::to_string(ids[7]));
    CHECK(whole.json()["body"] == large_body(7, size));
    CHECK(whole.json()["body_truncated"] == false);
    CHECK(whole.json()["body_bytes"] == size);
    // So does the link as listed, by the entry's handle.
    REQUIRE(!handle_of_8th.empty());
    auto by_handle = c.get("/dlq/work.dlq/messages/" + handle_of_8th);
    REQUIRE(by_handle.status() == 200);
    CHECK(by_handle.json()["id"] == letterbox::to_string(ids[7]));
    CHECK(by_handle.json()["body_bytes"] == size);
    CHECK(f.ready(dlq_test::dlq_name) == count);
}

TEST_CASE("http_server: the listing's byte bounds, the body preview and the message endpoint",
          "[ops][http_server]") {
    fixture f(false);
    auto o = f.options();
    o.max_listing_bytes = 64 * 1024;
    o.listing_body_bytes = 5;
    // A body that is cut inside a two-byte character keeps only whole characters.
    const auto accented = f.dead_letter_explicitly({}, "note",
                                                   "abcd\xc3\xa9"
                                                   "fgh");
    const auto small = f.dead_letter_explicitly({}, "note", "tiny");
    const auto binary =
        f.dead_letter_explicitly({}, "blob", std::string("\x00\x01\x02\xff\xfe\x03\x04", 7));
    fill(f, 3, 40 * 1024);
    auto server = f.make_server(o);
    client c(f, *server);

    auto r = c.get("/dlq/work.dlq?limit=3");
    REQUIRE(r.status() == 200);
    auto j = r.json();
    REQUIRE(j["entries"].size() == 3);
    CHECK(j["entries"][0]["body"] == "abcd");
    CHECK(j["entries"][0]["body_truncated"] == true);
    CHECK(j["entries"][0]["body_bytes"] == 9);
    CHECK(j["entries"][1]["body"] == "tiny");
    CHECK(j["entries"][1]["body_truncated"] == false);
    CHECK(j["entries"][2]["body_encoding"] == "base64");
    CHECK(j["entries"][2]["body_truncated"] == true);
    CHECK(j["entries"][2]["body_bytes"] == 7);
    CHECK(j["next_offset"] == 3); // the limit was reached: there may be more

    // 40 KiB bodies: the scan stops once it holds max_listing_bytes of bodies (two of them).
    auto rest = c.get("/dlq/work.dlq?offset=3");
    REQUIRE(rest.status() == 200);
    CHECK(rest.res.body().size() <= o.max_listing_bytes);
    CHECK(rest.json()["entries"].size() == 2);
    CHECK(rest.json()["next_offset"] == 5);
    auto last = c.get("/dlq/work.dlq?offset=5");
    CHECK(last.json()["entries"].size() == 1);
    CHECK(last.json()["next_offset"].is_null());
    auto past = c.get("/dlq/work.dlq?offset=6");
    CHECK(past.json()["entries"].empty());
    CHECK(past.json()["next_offset"].is_null());

    // The message endpoint: the whole entry; unknown and malformed ids.
    auto whole = c.get("/dlq/work.dlq/messages/" + letterbox::to_string(accented));
    REQUIRE(whole.status() == 200);
    CHECK(whole.json()["body"] == "abcd\xc3\xa9"
                                  "fgh");
    auto unknown = c.get("/dlq/work.dlq/messages/" +
                         letterbox::to_string(letterbox::message_id_generator{99}()));
    CHECK(unknown.status() == 404);
    CHECK(unknown.json()["error"]["code"] == "unknown_message");
    auto bad = c.get("/dlq/work.dlq/messages/not-a-uuid");
    CHECK(bad.status() == 400);
    CHECK(bad.json()["error"]["code"] == "bad_filter");
    CHECK(c.get("/dlq/other.dlq/messages/" + letterbox::to_string(small)).status() == 404);
    CHECK(c.get("/dlq/work.dlq/messages/" + letterbox::to_string(small) + "?x=1").status() == 400);
    auto post = c.post("/dlq/work.dlq/messages/" + letterbox::to_string(small), std::string());
    CHECK(post.status() == 405);
    CHECK(f.ready(dlq_test::dlq_name) == 6);
    (void)binary;
}

TEST_CASE("http_server: clients that never read cannot make it hold more than its response "
          "budget",
          "[ops][http_server]") {
    fixture f(false);
    // Each whole message is larger than what the socket buffers absorb (the stalled clients ask
    // for a small receive buffer), so a response to a client that never reads stays in the
    // server until the write timeout.
    constexpr std::size_t size = 6 * 1024 * 1024;
    const auto ids = fill(f, 3, size);
    auto o = f.options();
    o.max_response_bytes_in_flight = 14 * 1024 * 1024; // two such responses fit, three do not
    // Long enough for the requests below on a loaded machine under sanitizers, short enough
    // for the test.
    o.write_timeout = 6s;
    auto server = f.make_server(o);

    std::vector<std::unique_ptr<client>> stalled;
    for (int i = 0; i < 2; ++i) {
        stalled.push_back(std::make_unique<client>(f, *server, true));
        auto& s = *stalled.back();
        s.send(http::verb::get,
               "/dlq/work.dlq/messages/" + letterbox::to_string(ids[static_cast<std::size_t>(i)]),
               {}, bearer);
        // The response has started: its first bytes are readable (and never read).
        REQUIRE(f.run_until([&] { return s.stream.socket().available() > 0; }));
    }
    client third(f, *server);
    auto refused = third.get("/dlq/work.dlq/messages/" + letterbox::to_string(ids[2]));
    CHECK(refused.status() == 503);
    CHECK(refused.json()["error"]["code"] == "busy");
    CHECK_FALSE(refused.res[http::field::retry_after].empty());
    // What still fits is served: a listing (bodies cut), health.
    CHECK(third.get("/dlq/work.dlq").status() == 200);
    CHECK(third.get("/health/live").status() == 200);

    // The write timeout drops the stalled responses, and the budget is free again.
    REQUIRE(f.run_until([&] { return log_count(f, "write timed out") == 2; }, 30s));
    std::optional<reply> served;
    for (int attempt = 0; attempt < 100 && !(served && served->status() == 200); ++attempt) {
        client next(f, *server);
        served = next.get("/dlq/work.dlq/messages/" + letterbox::to_string(ids[2]));
        if (served->status() != 200)
            f.run_until([] { return false; }, 100ms);
    }
    REQUIRE(served.has_value());
    CHECK(served->status() == 200);
    CHECK(served->json()["body_bytes"] == size);
    CHECK(f.ready(dlq_test::dlq_name) == 3);
}

} // namespace unit_ops_http_server_listing
