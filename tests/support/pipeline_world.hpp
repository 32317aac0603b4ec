// SPDX-License-Identifier: BSL-1.0
#pragma once

// The end-to-end world of the outbox and inbox tests: the enrollment service of the seeds'
// incident (a SQLite file with its enrollments and its outbox), the in-memory broker, and the
// access service (another SQLite file with its access grants and its inbox). Everything runs on
// one single-threaded io_context with a virtual clock, so a run is deterministic.

#include <letterbox/sqlite.hpp>

#include <letterbox/consumer.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/payload.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/simulation.hpp"
#include "support/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

namespace pipeline {

using namespace std::chrono_literals;
using letterbox::errc;

using temp_dir = test_support::temp_directory;

inline constexpr const char* exchange_name = "enrollments";
inline constexpr const char* queue_name = "access.enrollments";
inline constexpr const char* dead_letter_queue = "access.enrollments.dlq";
inline constexpr const char* routing_key = "enrollment.confirmed";

/// The broker and the clock, on one thread.
struct world : test_support::simulation {
    /// The topic exchange, the access service's queue bound to `enrollment.#`, and its
    /// dead-letter queue.
    void declare_topology() {
        letterbox::in_memory::transport admin(broker, "admin");
        letterbox::topology::exchange x;
        x.name = exchange_name;
        x.type = letterbox::topology::exchange_type::topic;
        REQUIRE_FALSE(await([&](auto h) { admin.async_declare(x, h); }));
        letterbox::topology::queue dlq;
        dlq.name = dead_letter_queue;
        REQUIRE_FALSE(await([&](auto h) { admin.async_declare(dlq, h); }));
        letterbox::topology::queue q;
        q.name = queue_name;
        letterbox::topology::queue_arguments args;
        args.dead_letter_exchange = "";
        args.dead_letter_routing_key = dead_letter_queue;
        q.arguments = args.to_table();
        REQUIRE_FALSE(await([&](auto h) { admin.async_declare(q, h); }));
        letterbox::topology::binding b;
        b.source = exchange_name;
        b.destination = queue_name;
        b.routing_key = "enrollment.#";
        REQUIRE_FALSE(await([&](auto h) { admin.async_bind(b, h); }));
        REQUIRE_FALSE(await([&](auto h) { admin.async_close(h); }));
    }
};

/// Runs `sql` (no parameters) on `db` in a unit of work of its own.
inline void exec(letterbox::sqlite::database& db, const std::string& sql) {
    auto uow = db.begin();
    REQUIRE_FALSE(uow.connection().exec(sql));
    REQUIRE_FALSE(uow.commit());
}

/// One integer that `sql` selects.
inline std::int64_t scalar(letterbox::sqlite::database& db, const std::string& sql) {
    auto uow = db.begin();
    std::error_code ec;
    auto st = uow.connection().prepare(sql, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(st->step(ec));
    REQUIRE_FALSE(ec);
    return st->column_int64(0);
}

/// The enrollment service: confirms enrollments and appends `enrollment.confirmed` to its
/// outbox, in one unit of work.
struct enrollment_service {
    letterbox::sqlite::database db;
    letterbox::sqlite::outbox_store outbox;
    letterbox::message_id_generator ids;

    enrollment_service(const std::string& path, std::uint64_t seed)
        : db(letterbox::sqlite::database::open(path))
        , outbox(db)
        , ids(seed) {
        exec(db, "CREATE TABLE IF NOT EXISTS enrollments(id INTEGER PRIMARY KEY, student TEXT "
                 "NOT NULL, course TEXT NOT NULL)");
    }

    /// Confirms enrollment `id` of `student`; returns the event's message id.
    letterbox::message_id confirm(std::int64_t id, const std::string& student,
                                  letterbox::store_time now,
                                  const std::function<void()>& on_commit = {},
                                  std::string key = routing_key) {
        letterbox::outbox_entry e;
        e.msg.id = ids();
        e.msg.type = "enrollment.confirmed";
        e.msg.exchange = exchange_name;
        e.msg.routing_key = std::move(key);
        REQUIRE_FALSE(letterbox::encode_payload(
            e.msg, nlohmann::json{{"enrollment", id}, {"student", student}}));
        e.aggregate_type = "student";
        e.aggregate_id = student;

        auto uow = db.begin();
        std::error_code ec;
        auto st = uow.connection().prepare(
            "INSERT INTO enrollments(id, student, course) VALUES (?1, ?2, 'cpp-101')", ec);
        REQUIRE_FALSE(ec);
        REQUIRE_FALSE(st->bind_int64(1, id));
        REQUIRE_FALSE(st->bind_text(2, student));
        REQUIRE_FALSE(st->execute());
        REQUIRE_FALSE(outbox.add(uow, e, now));
        if (on_commit)
            REQUIRE_FALSE(uow.on_commit(on_commit));
        REQUIRE_FALSE(uow.commit());
        return e.msg.id;
    }

    letterbox::outbox_stats stats(letterbox::store_time now) {
        std::error_code ec;
        auto s = outbox.stats(now, ec);
        REQUIRE_FALSE(ec);
        return s;
    }
};

/// The access service: grants access once per confirmed enrollment, through the inbox.
struct access_service {
    letterbox::sqlite::database db;
    letterbox::sqlite::inbox_store inbox;

    explicit access_service(const std::string& path)
        : db(letterbox::sqlite::database::open(path))
        , inbox(db) {
        // No unique constraint on purpose: a duplicate effect must be visible as a second row.
        exec(db, "CREATE TABLE IF NOT EXISTS access_grants(message_id TEXT NOT NULL, "
                 "enrollment INTEGER NOT NULL)");
    }

    /// The effect: one access grant row, written in the idempotent unit of work.
    static void grant(const letterbox::message& m, letterbox::sqlite::unit_of_work& u) {
        const auto enrollment = letterbox::decode_payload<nlohmann::json>(m).at("enrollment");
        std::error_code ec;
        auto st = u.connection().prepare(
            "INSERT INTO access_grants(message_id, enrollment) VALUES (?1, ?2)", ec);
        if (ec)
            throw letterbox::error(ec, "prepare");
        st->bind_text(1, letterbox::to_string(m.id));
        st->bind_int64(2, enrollment.get<std::int64_t>());
        if (auto failed = st->execute())
            throw letterbox::error(failed, "insert access grant");
    }

    auto handler(letterbox::virtual_clock& clock) {
        return letterbox::idempotent(
            &access_service::grant, inbox, [this] { return db.begin(); }, "access-service", clock);
    }

    std::int64_t grants() { return scalar(db, "SELECT COUNT(*) FROM access_grants"); }
    std::int64_t distinct_grants() {
        return scalar(db, "SELECT COUNT(DISTINCT message_id) FROM access_grants");
    }
    /// The largest number of grants of one message (1 when every effect happened once).
    std::int64_t max_grants_per_message() {
        return scalar(db, "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM "
                          "access_grants GROUP BY message_id)");
    }
};

using relay_type =
    letterbox::outbox_relay<letterbox::sqlite::outbox_store, letterbox::in_memory::transport,
                            letterbox::virtual_clock>;

/// One relay process: a relay with its own connection to the broker, started at once.
struct relay_process {
    letterbox::in_memory::transport transport;
    relay_type relay;
    std::optional<std::error_code> finished;

    relay_process(world& w, letterbox::sqlite::outbox_store& store,
                  letterbox::relay_options options)
        : transport(w.broker, options.owner)
        , relay(store, transport, w.clock, std::move(options)) {
        relay.async_run([this](std::error_code ec) { finished = ec; });
    }

    /// A graceful stop, driven until the relay finished.
    void stop(world& w) {
        relay.stop();
        REQUIRE(w.drive_until([&] { return finished.has_value(); }));
        CHECK_FALSE(*finished);
    }
};

} // namespace pipeline
