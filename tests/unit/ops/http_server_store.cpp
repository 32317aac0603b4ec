// SPDX-License-Identifier: BSL-1.0
// The outbox endpoints call the store off the server's I/O: while another connection holds the
// SQLite write lock of a real file, POST /outbox/{id}/retry gets a quick 503 (store_timeout)
// instead of blocking the server for the store's busy timeout and retries, /health/live and
// reads of the outbox answer meanwhile, and the retry takes effect once the lock is released.
// Before, the store call ran on the server's strand and /health/live waited for it.

#include <letterbox/ops/http_server.hpp>

#include <letterbox/outbox_record.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/database_options.hpp>
#include <letterbox/sqlite/outbox_store.hpp>
#include <letterbox/testing/temp_directory.hpp>

#include "unit/ops/http_test_support.hpp"

#include <catch2/catch.hpp>

#include <boost/beast/http/field.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <system_error>

namespace unit_ops_http_server_store {

namespace {

using namespace ops_test;

std::chrono::milliseconds since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
}

} // namespace

TEST_CASE("http_server: a locked SQLite outbox does not block the server, and a retry gets a "
          "quick 503",
          "[ops][http_server][sqlite][threads]") {
    letterbox::testing::temp_directory dir;
    const auto path = dir.file("outbox.db");
    letterbox::sqlite::database_options patient;
    // The store waits 1.5 s for the lock and tries once more: about 3 s blocked in all.
    patient.busy_timeout = 1500ms;
    patient.max_busy_retries = 1;
    auto db = letterbox::sqlite::database::open(path, patient);
    letterbox::sqlite::outbox_store store(db);

    fixture f(false);
    letterbox::outbox_entry e;
    e.msg.id = letterbox::message_id_generator{5}();
    e.msg.type = "order.created";
    e.msg.exchange = "orders";
    e.aggregate_type = "order";
    e.aggregate_id = "1";
    {
        auto uow = db.begin();
        REQUIRE_FALSE(store.add(uow, e, letterbox::store_time{f.clock.wall_now()}));
        REQUIRE_FALSE(uow.commit());
    }
    REQUIRE_FALSE(store.park(e.msg.id, "broker said no"));
    const auto retry_target = "/outbox/" + letterbox::to_string(e.msg.id) + "/retry";

    auto o = f.options();
    const auto store_timeout = o.store_timeout;
    auto server = std::make_unique<http_server>(f.io.get_executor(), o);
    server->set_outbox(store, f.clock);
    REQUIRE_FALSE(server->listen());

    // Another connection (another process, in production) holds the write lock.
    auto holder_db = letterbox::sqlite::database::open(path);
    auto holder = holder_db.begin();
    REQUIRE(holder.is_open());

    client retrying(f, *server);
    const auto sent = std::chrono::steady_clock::now();
    retrying.send(http::verb::post, retry_target, std::string(), bearer);

    client probe(f, *server);
    const auto asked = std::chrono::steady_clock::now();
    CHECK(probe.get("/health/live", std::nullopt).status() == 200);
    const auto live_took = since(asked);
    INFO("/health/live took " << live_took.count() << " ms");
    CHECK(live_took < 500ms);
    // Reads need no lock (WAL): they are served while the write waits.
    const auto read_at = std::chrono::steady_clock::now();
    CHECK(probe.get("/outbox", std::nullopt).status() == 200);
    CHECK(since(read_at) < 1000ms);

    auto busy = retrying.receive();
    const auto retry_took = since(sent);
    INFO("the retry took " << retry_took.count() << " ms");
    CHECK(busy.status() == 503);
    CHECK(busy.json()["error"]["code"] == "store_busy");
    CHECK_FALSE(busy.res[http::field::retry_after].empty());
    CHECK(retry_took < store_timeout + 1000ms);
    CHECK(probe.get("/health/live", std::nullopt).status() == 200);

    // Released: the retry goes through (the first one may have, late: then it is 409).
    REQUIRE_FALSE(holder.rollback());
    std::optional<int> settled;
    for (int attempt = 0; attempt < 100 && !settled; ++attempt) {
        const auto r = retrying.post(retry_target, std::string());
        if (r.status() == 200 || r.status() == 409)
            settled = r.status();
        else
            f.run_until([] { return false; }, 100ms);
    }
    REQUIRE(settled.has_value());
    std::error_code ec;
    const auto row = store.find(e.msg.id, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(row.has_value());
    CHECK(row->status == letterbox::outbox_status::pending);
    server.reset(); // waits for a store call still running, before the store goes
}

} // namespace unit_ops_http_server_store
