// SPDX-License-Identifier: BSL-1.0
// The idempotent middleware over the SQLite inbox: two copies of one message delivered at the
// same time to two consumers (two threads, two connections to one database file) give exactly
// one effect.

#include <letterbox/sqlite.hpp>

#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/steady_clock.hpp>

#include "support/pipeline_world.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

namespace unit_middleware_idempotent_sqlite {

TEST_CASE("idempotent on SQLite: two threads on two connections handling the same messages "
          "give one effect each",
          "[middleware][idempotent][sqlite][threads]") {
    pipeline::temp_dir dir;
    const auto path = dir.file("access.db");
    pipeline::access_service first(path);  // each service object opens its own connections
    pipeline::access_service second(path); // to the same file
    letterbox::steady_clock clock;

    constexpr int messages = 150;
    letterbox::message_id_generator ids{99};
    std::vector<letterbox::message> copies;
    for (int i = 0; i < messages; ++i) {
        letterbox::message m;
        m.id = ids();
        REQUIRE_FALSE(letterbox::encode_payload(m, nlohmann::json{{"enrollment", i}}));
        copies.push_back(m);
    }

    auto h1 = letterbox::idempotent(
        &pipeline::access_service::grant, first.inbox, [&] { return first.db.begin(); },
        "access-service", clock);
    auto h2 = letterbox::idempotent(
        &pipeline::access_service::grant, second.inbox, [&] { return second.db.begin(); },
        "access-service", clock);
    std::latch start(2);
    std::atomic<int> errors{0}; // Catch2 v2 assertions are not thread-safe
    auto consume = [&](auto& handler) {
        start.arrive_and_wait();
        for (const auto& m : copies)
            if (handler(m))
                errors.fetch_add(1);
    };
    std::thread a([&] { consume(h1); });
    std::thread b([&] { consume(h2); });
    a.join();
    b.join();

    CHECK(errors.load() == 0);
    CHECK(first.grants() == messages);
    CHECK(first.max_grants_per_message() == 1);
    CHECK(h1.stats().processed + h2.stats().processed == messages);
    CHECK(h1.stats().duplicates + h2.stats().duplicates == messages);
    std::error_code ec;
    CHECK(first.inbox.size(ec) == messages);
}

TEST_CASE("idempotent on SQLite: three distinct messages without a message id are refused, not "
          "taken for duplicates, or all handled when told to",
          "[middleware][idempotent][sqlite]") {
    pipeline::temp_dir dir;
    pipeline::access_service service(dir.file("access.db"));
    letterbox::virtual_clock clock;
    std::vector<letterbox::message> id_less; // the nil id: the publisher set no message-id
    for (int i = 0; i < 3; ++i) {
        letterbox::message m;
        REQUIRE_FALSE(letterbox::encode_payload(m, nlohmann::json{{"enrollment", i}}));
        id_less.push_back(m);
    }

    auto refusing = service.handler(clock);
    for (const auto& m : id_less)
        CHECK(refusing(m) == letterbox::errc::missing_idempotency_key);
    CHECK(service.grants() == 0);
    CHECK(refusing.stats() == letterbox::idempotent_stats{0, 0, 0, 3, 0});

    auto unguarded = service.handler(clock).on_missing_key(
        letterbox::idempotency_key::missing_key_action::handle_without_dedup);
    for (const auto& m : id_less)
        CHECK_FALSE(unguarded(m));
    CHECK(service.grants() == 3);
    CHECK(pipeline::scalar(service.db, "SELECT COUNT(DISTINCT enrollment) FROM access_grants") ==
          3);
    CHECK(unguarded.stats().unkeyed == 3);
    std::error_code ec;
    CHECK(service.inbox.size(ec) == 0);
}

} // namespace unit_middleware_idempotent_sqlite
