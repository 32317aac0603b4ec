// SPDX-License-Identifier: BSL-1.0
// The consumer's group commit on an SQLite inbox: the batch's shared unit holds the file's one
// write lock, so nothing else on the consumer's thread may begin a unit while it is open.

#include <letterbox/consumer.hpp>

#include <letterbox/group_commit_options.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/inbox_store.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>

#include "unit/consumer_world.hpp"
#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <system_error>
#include <vector>

namespace unit_sqlite_group_commit {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
using letterbox_sqlite_test::temp_directory;

} // namespace

TEST_CASE("group commit on sqlite: a delivery handled again after a store failure never waits "
          "for the write lock of the batch beside it",
          "[consumer][group_commit][sqlite]") {
    unit_consumer_support::world w;
    w.declare_queue_with_dead_letters("work");
    temp_directory dir;
    // A lock that is not free at once fails at once: a wait for it would show as a failure.
    letterbox::sqlite::database_options no_wait;
    no_wait.busy_timeout = 0ms;
    no_wait.max_busy_retries = 0;
    auto db = letterbox::sqlite::database::open(dir.file("inbox.db"), no_wait);
    letterbox::sqlite::inbox_store inbox(db);

    std::vector<std::string> applied;
    bool failed_once = false;
    auto effect = [&](const letterbox::message& m,
                      letterbox::sqlite::unit_of_work& u) -> std::error_code {
        if (m.body == "c" && !failed_once) {
            failed_once = true;
            return make_error_code(errc::store_busy); // held, handled again after 100 ms
        }
        return u.on_commit([&applied, body = m.body] { applied.push_back(body); });
    };
    letterbox::consumer_options o;
    o.consume.queue = "work";
    o.consume.prefetch = 10;
    o.group_commit = {.max_messages = 3, .max_delay = 5ms};
    letterbox::consumer c(w.transport,
                          letterbox::idempotent(
                              effect, inbox, [&db] { return db.begin(); }, "worker", w.clock),
                          w.clock, o);
    w.start(c);
    auto publish = [&](std::string body) {
        REQUIRE_FALSE(w.publish("work", std::move(body)));
    };
    for (auto body : {"a", "b", "c"})
        publish(body);
    REQUIRE(w.run_until([&] { return c.stats().acked == 2 && c.stats().failed == 1; }));

    // "d" arrives 99 ms into c's back-off and waits for company; c comes back 1 ms later and
    // queues behind it. d's batch must not hold the lock while c begins its own unit. The last
    // 5 ms end d's max_delay: the old code then ran d and c as one batch.
    w.clock.advance(99ms);
    publish("d");
    REQUIRE(w.run_until([&] { return c.stats().delivered == 4; }));
    w.clock.advance(1ms);
    w.clock.advance(5ms);
    REQUIRE(w.run_until([&] { return c.stats().acked == 4 || c.stats().failed > 1; }));
    CHECK(c.stats().failed == 1);
    CHECK(c.stats().acked == 4);
    CHECK(db.busy_retries() == 0);
    CHECK(applied == std::vector<std::string>{"a", "b", "d", "c"});
}

} // namespace unit_sqlite_group_commit
