// SPDX-License-Identifier: BSL-1.0
// `letterbox outbox status|retry|purge` run as a child process on a real SQLite file in a
// temporary directory: two parked rows, one pending row, two published rows (one published two
// hours ago, one now).

#include <letterbox/message.hpp>
#include <letterbox/outbox/outbox_record.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/outbox_store.hpp>
#include <letterbox/testing/temp_directory.hpp>

#include "cli_support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace {

using namespace cli_test;

struct outbox_world {
    letterbox::testing::temp_directory dir;
    std::string path = (dir.path() / "orders.db").string();
    letterbox::sqlite::database db = letterbox::sqlite::database::open(path);
    letterbox::sqlite::outbox_store store{db};
    letterbox::message_id_generator ids;
    letterbox::store_time now = std::chrono::system_clock::now();
    std::vector<letterbox::message_id> parked, published;
    letterbox::message_id pending{};

    letterbox::message_id add(const std::string& aggregate) {
        letterbox::outbox_entry e;
        e.msg.id = ids();
        e.msg.type = "order.placed";
        e.msg.exchange = "orders";
        e.msg.routing_key = "order.placed";
        e.msg.body = "{}";
        e.msg.properties.content_type = "application/json";
        e.aggregate_type = "order";
        e.aggregate_id = aggregate;
        auto uow = db.begin();
        REQUIRE_FALSE(store.add(uow, e, now - std::chrono::hours{3}));
        uow.commit();
        return e.msg.id;
    }

    outbox_world() {
        published = {add("p1"), add("p2")};
        std::error_code ec;
        const auto claimed = store.claim("relay", 10, std::chrono::seconds{30}, now, ec);
        REQUIRE_FALSE(ec);
        REQUIRE(claimed.size() == 2);
        REQUIRE_FALSE(store.mark_published(published[0], "relay", now - std::chrono::hours{2}));
        REQUIRE_FALSE(store.mark_published(published[1], "relay", now));
        parked = {add("a"), add("b")};
        for (const auto& id : parked)
            REQUIRE_FALSE(store.park(id, "exchange orders not found"));
        pending = add("c");
    }

    letterbox::outbox_status status_of(const letterbox::message_id& id) {
        std::error_code ec;
        const auto row = store.find(id, ec);
        REQUIRE_FALSE(ec);
        REQUIRE(row.has_value());
        return row->status;
    }
};

} // namespace

TEST_CASE("outbox status counts the rows and lists the parked ones", "[integration][cli]") {
    outbox_world w;
    const auto human = run_cli({"outbox", "status", "--db", w.path});
    REQUIRE(human.status == 0);
    CHECK(human.out.find("parked:     2") != std::string::npos);
    CHECK(human.out.find(letterbox::to_string(w.parked[0])) != std::string::npos);
    CHECK(human.out.find("exchange orders not found") != std::string::npos);

    const auto json = run_cli({"outbox", "status", "--db", w.path, "--json"});
    REQUIRE(json.status == 0);
    const auto j = nlohmann::json::parse(json.out);
    CHECK(j.at("stats").at("pending") == 1);
    CHECK(j.at("stats").at("parked") == 2);
    CHECK(j.at("stats").at("published") == 2);
    CHECK(j.at("stats").at("oldest_pending_age_seconds").get<long>() >= 3 * 3600 - 60);
    REQUIRE(j.at("rows").size() == 2);
    std::set<std::string> rows;
    for (const auto& r : j.at("rows")) {
        rows.insert(r.at("id").get<std::string>());
        CHECK(r.at("status") == "parked");
    }
    CHECK(rows == std::set<std::string>{letterbox::to_string(w.parked[0]),
                                        letterbox::to_string(w.parked[1])});
}

TEST_CASE("outbox retry unparks a row by id, or every parked row", "[integration][cli]") {
    outbox_world w;
    const auto one =
        run_cli({"outbox", "retry", "--db", w.path, letterbox::to_string(w.parked[0])});
    REQUIRE(one.status == 0);
    CHECK(one.out.find("retried 1 row") != std::string::npos);
    CHECK(w.status_of(w.parked[0]) == letterbox::outbox_status::pending);
    CHECK(w.status_of(w.parked[1]) == letterbox::outbox_status::parked);

    const auto not_parked =
        run_cli({"outbox", "retry", "--db", w.path, letterbox::to_string(w.pending)});
    CHECK(not_parked.status == 1);
    CHECK(not_parked.out.find("not parked") != std::string::npos);

    const auto unknown =
        run_cli({"outbox", "retry", "--db", w.path, "00000000-0000-4000-8000-000000000000"});
    CHECK(unknown.status == 4);

    const auto all = run_cli({"outbox", "retry", "--db", w.path, "--all-parked", "--json"});
    REQUIRE(all.status == 0);
    CHECK(nlohmann::json::parse(all.out).at("retried") == 1);
    CHECK(w.status_of(w.parked[1]) == letterbox::outbox_status::pending);
}

TEST_CASE("outbox purge deletes published rows older than --older-than", "[integration][cli]") {
    outbox_world w;
    const auto missing = run_cli({"outbox", "purge", "--db", w.path});
    CHECK(missing.status == 2);
    CHECK(missing.err.find("--older-than") != std::string::npos);
    const auto bad = run_cli({"outbox", "purge", "--db", w.path, "--older-than", "7 days"});
    CHECK(bad.status == 2);

    const auto r = run_cli({"outbox", "purge", "--db", w.path, "--older-than", "1h"});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("removed 1 published row") != std::string::npos);
    std::error_code ec;
    CHECK_FALSE(w.store.find(w.published[0], ec).has_value());
    CHECK(w.store.find(w.published[1], ec).has_value());
    CHECK(w.status_of(w.pending) == letterbox::outbox_status::pending);
}

TEST_CASE("outbox on a database file that does not exist is exit code 3", "[integration][cli]") {
    letterbox::testing::temp_directory dir;
    const auto path = (dir.path() / "missing.db").string();
    const auto r = run_cli({"outbox", "status", "--db", path});
    CHECK(r.status == 3);
    CHECK(r.err.find("check --db") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(path)); // it did not create one
}
