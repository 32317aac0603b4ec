// SPDX-License-Identifier: BSL-1.0
//
// bench_outbox: the transactional outbox and the inbox on SQLite, each against a baseline
// measured in the same run (the machine is a shared 2-core box: only ratios are stable).
//
//   append    One transaction per enrollment (BEGIN IMMEDIATE; INSERT the enrollment; append
//             the `enrollment.confirmed` event; COMMIT) through sqlite::unit_of_work and
//             sqlite::outbox_store::add, against raw sqlite3 C calls running the same
//             INSERTs (same outbox table, same indexes) in the same kind of transaction.
//             WAL, synchronous=NORMAL. Target: >= 0.9x.
//   drain     outbox_relay draining N pending rows from SQLite into the in-memory transport
//             (claim, publish with confirms, mark published), against the bare transport
//             publishing the same messages with the same window and no store. Target:
//             >= 100,000 rows/s.
//   drain-pool the same drain with the store calls on a thread pool of one thread
//             (`relay_options::store_executor`), so that SQLite and the transport each have a
//             core; against the same baseline.
//   latency   commit -> confirmed publish with the relay woken by the unit of work's
//             after-commit callback: p50 and p99 over N commits, against the naive dual write
//             (commit, then publish and wait for the confirm) in the same run. Target:
//             p99 <= 5 ms.
//   inbox     the idempotent handler (inbox record + the effect's INSERT + COMMIT) against the
//             same transaction without the inbox record. Target: overhead <= 5%.
//   group     a consumer on the in-memory transport with group commit of 100 (prefetch 200):
//             the idempotent handler with the SQLite inbox and the same one-row effect, against
//             the same consumer, handler and batches with no key to record (the effect alone).
//             Target: >= 0.95x (seed 002, exercise 4). Its floor is printed under it: the
//             same transactions (savepoints, the effect's INSERT, the inbox's INSERT) in raw
//             sqlite3 calls, with and without the inbox's INSERT.
//
// Rates use wall time (SQLite's cost includes its write(2) calls). Each row alternates the
// letterbox side and its baseline `--repeat` times (default 5) and reports medians, each with
// the spread of its rounds, and the machine's load at the start and the end (report.hpp). Every run
// checks its result (rows written, rows published, effects applied) and exits 1 on a mismatch.
//
// Usage: bench_outbox [--rows N] [--repeat R] [--only ROW]
// `--only` runs one row (append, drain, drain-pool, inbox, group or latency) and its baseline, to
// profile it.
#include <letterbox/sqlite.hpp>

#include <letterbox/letterbox.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/outbox/outbox_relay.hpp>

#include "../raw_sqlite.hpp"
#include "../report.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace lb = letterbox;
using namespace std::chrono_literals;
using wall = std::chrono::steady_clock;

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what);
        ++failures;
    }
}

double seconds_since(wall::time_point t0) {
    return std::chrono::duration<double>(wall::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

/// A scratch directory for one run's database files.
struct scratch {
    std::filesystem::path dir;
    explicit scratch(const char* name) {
        dir = std::filesystem::temp_directory_path() /
              ("letterbox-bench-" + std::string(name) + "-" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
    }
    ~scratch() { std::filesystem::remove_all(dir); }
    std::string file(const char* name) const { return (dir / name).string(); }
};

const char* const enrollment_table =
    "CREATE TABLE enrollments(id INTEGER PRIMARY KEY, student TEXT NOT NULL, course TEXT NOT NULL)";

lb::outbox_entry enrollment_event(lb::message_id_generator& ids, std::int64_t id) {
    lb::outbox_entry e;
    e.msg = lb::make_message(
        ids, "enrollment.confirmed", "enrollments", "enrollment.confirmed",
        nlohmann::json{{"enrollment", id}, {"student", "student-" + std::to_string(id % 1000)}});
    e.aggregate_type = "student";
    e.aggregate_id = "student-" + std::to_string(id % 1000);
    return e;
}

lb::sqlite::database open_database(const std::string& path) {
    lb::sqlite::database_options o; // WAL and synchronous=NORMAL are the defaults
    auto db = lb::sqlite::database::open(path, o);
    auto uow = db.begin();
    expect(!uow.connection().exec(enrollment_table) && !uow.commit(),
           "create the enrollments table");
    return db;
}

/// Runs `io`'s handlers until `done()` holds or nothing is left to run (an io_context stops
/// whenever it runs out of work, so it is restarted before each step).
void run_until(boost::asio::io_context& io, const std::function<bool()>& done) {
    while (!done()) {
        io.restart();
        if (io.run_one() == 0)
            return;
    }
}

using bench::exec_or_die;
using bench::prepare_or_die;

// A raw connection to `path` with the settings letterbox's connections use (WAL,
// synchronous=NORMAL), for the baselines that run the same SQL without letterbox.
sqlite3* open_raw(const std::string& path) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK)
        std::exit(1);
    exec_or_die(db, "PRAGMA journal_mode=WAL");
    exec_or_die(db, "PRAGMA synchronous=NORMAL");
    return db;
}

// Runs `st` (a statement that returns no row) and resets it.
void step_or_die(sqlite3* db, sqlite3_stmt* st) {
    const int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        std::fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
        std::exit(1);
    }
}

// ---- append ------------------------------------------------------------------------------

/// The enrollment service's business write, in `uow`.
std::error_code insert_enrollment(lb::sqlite::unit_of_work& uow, std::int64_t id,
                                  const std::string& student) {
    std::error_code ec;
    auto st = uow.connection().prepare(
        "INSERT INTO enrollments(id, student, course) VALUES (?1, ?2, 'cpp-101')", ec);
    if (ec)
        return ec;
    st->bind_int64(1, id);
    st->bind_text(2, student);
    return st->execute();
}

double append_letterbox(std::size_t rows) {
    scratch s("append");
    auto db = open_database(s.file("letterbox.db"));
    lb::sqlite::outbox_store outbox(db);
    lb::message_id_generator ids;
    std::vector<lb::outbox_entry> events;
    for (std::size_t i = 0; i < rows; ++i)
        events.push_back(enrollment_event(ids, static_cast<std::int64_t>(i)));
    const auto now = std::chrono::system_clock::now();

    const auto t0 = wall::now();
    for (std::size_t i = 0; i < rows; ++i) {
        auto uow = db.begin();
        auto ec = insert_enrollment(uow, static_cast<std::int64_t>(i), events[i].aggregate_id);
        if (!ec)
            ec = outbox.add(uow, events[i], now);
        if (!ec)
            ec = uow.commit();
        if (ec) {
            expect(false, "letterbox append");
            break;
        }
    }
    const double rate = rows / seconds_since(t0);
    std::error_code ec;
    expect(outbox.stats(now, ec).pending == rows, "every appended row is pending");
    return rate;
}

double append_raw(std::size_t rows) {
    scratch s("append-raw");
    // letterbox creates the schema (the same outbox table, indexes and triggers); from here on
    // only raw sqlite3 calls touch the file.
    { auto db = open_database(s.file("raw.db")); }
    sqlite3* db = open_raw(s.file("raw.db"));
    sqlite3_stmt* begin = prepare_or_die(db, "BEGIN IMMEDIATE");
    sqlite3_stmt* commit = prepare_or_die(db, "COMMIT");
    sqlite3_stmt* business = prepare_or_die(
        db, "INSERT INTO enrollments(id, student, course) VALUES (?1, ?2, 'cpp-101')");
    sqlite3_stmt* event = prepare_or_die(
        db, "INSERT INTO letterbox_outbox (message_id, aggregate_type, aggregate_id, event_type, "
            "exchange, routing_key, headers, properties, payload, created_at) VALUES (?1, ?2, ?3, "
            "?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    // The event's delivery state: unpublished, heading its aggregate or linked after the
    // aggregate's last unpublished row (the lane), which it then becomes.
    sqlite3_stmt* state = prepare_or_die(
        db, "INSERT INTO letterbox_outbox_unpublished (sequence, status, next_attempt_at, "
            "created_at, aggregate_type, aggregate_id, aggregate_head) VALUES (?1, 0, ?4, ?4, ?2, "
            "?3, NOT EXISTS (SELECT 1 FROM letterbox_outbox_lane WHERE aggregate_type = ?2 AND "
            "aggregate_id = ?3))");
    sqlite3_stmt* link = prepare_or_die(
        db, "UPDATE letterbox_outbox_unpublished SET next_sequence = ?1 WHERE sequence = (SELECT "
            "tail FROM letterbox_outbox_lane WHERE aggregate_type = ?2 AND aggregate_id = ?3)");
    sqlite3_stmt* lane = prepare_or_die(
        db, "INSERT INTO letterbox_outbox_lane (aggregate_type, aggregate_id, tail) VALUES (?2, "
            "?3, ?1) ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET tail = "
            "excluded.tail");
    lb::message_id_generator ids;
    std::vector<lb::outbox_entry> events;
    for (std::size_t i = 0; i < rows; ++i)
        events.push_back(enrollment_event(ids, static_cast<std::int64_t>(i)));
    const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();

    auto step = [db](sqlite3_stmt* st) {
        step_or_die(db, st);
    };
    const auto t0 = wall::now();
    for (std::size_t i = 0; i < rows; ++i) {
        const auto& e = events[i];
        const std::string id = lb::to_string(e.msg.id);
        step(begin);
        sqlite3_bind_int64(business, 1, static_cast<std::int64_t>(i));
        sqlite3_bind_text(business, 2, e.aggregate_id.data(), int(e.aggregate_id.size()),
                          SQLITE_STATIC);
        step(business);
        sqlite3_bind_text(event, 1, id.data(), int(id.size()), SQLITE_STATIC);
        sqlite3_bind_text(event, 2, e.aggregate_type.data(), int(e.aggregate_type.size()),
                          SQLITE_STATIC);
        sqlite3_bind_text(event, 3, e.aggregate_id.data(), int(e.aggregate_id.size()),
                          SQLITE_STATIC);
        sqlite3_bind_text(event, 4, e.msg.type.data(), int(e.msg.type.size()), SQLITE_STATIC);
        sqlite3_bind_text(event, 5, e.msg.exchange.data(), int(e.msg.exchange.size()),
                          SQLITE_STATIC);
        sqlite3_bind_text(event, 6, e.msg.routing_key.data(), int(e.msg.routing_key.size()),
                          SQLITE_STATIC);
        sqlite3_bind_text(event, 7, "{}", 2, SQLITE_STATIC);
        sqlite3_bind_text(event, 8, "{\"content_type\":\"application/json\"}", -1, SQLITE_STATIC);
        sqlite3_bind_blob(event, 9, e.msg.body.data(), int(e.msg.body.size()), SQLITE_STATIC);
        sqlite3_bind_int64(event, 10, now_ms);
        step(event);
        const std::int64_t sequence = sqlite3_last_insert_rowid(db);
        for (auto* st : {state, link, lane}) {
            sqlite3_bind_int64(st, 1, sequence);
            sqlite3_bind_text(st, 2, e.aggregate_type.data(), int(e.aggregate_type.size()),
                              SQLITE_STATIC);
            sqlite3_bind_text(st, 3, e.aggregate_id.data(), int(e.aggregate_id.size()),
                              SQLITE_STATIC);
        }
        sqlite3_bind_int64(state, 4, now_ms);
        step(state);
        step(link);
        step(lane);
        step(commit);
    }
    const double rate = rows / seconds_since(t0);
    for (auto* st : {begin, commit, business, event, state, link, lane})
        sqlite3_finalize(st);
    sqlite3_close(db);
    return rate;
}

// ---- drain -------------------------------------------------------------------------------

using relay_type =
    lb::outbox_relay<lb::sqlite::outbox_store, lb::in_memory::transport, lb::steady_clock>;

lb::relay_options drain_options() {
    lb::relay_options o;
    o.batch_size = 512;
    o.window = 512;
    o.poll_interval = 1s;
    return o;
}

/// A broker on a single-threaded io_context, with the queue `access` bound to the exchange
/// `enrollments` and a consumer that acks and counts every delivery.
struct broker_rig {
    boost::asio::io_context io;
    lb::steady_clock clock;
    lb::in_memory::broker broker{io.get_executor(), clock};
    lb::in_memory::transport transport{broker, "bench"};
    std::size_t received = 0;

    broker_rig() {
        bool declared = false;
        const lb::topology::exchange x{.name = "enrollments",
                                       .type = lb::topology::exchange_type::topic};
        const lb::topology::queue q{.name = "access"};
        const lb::topology::binding b{"enrollments", "access", "enrollment.#"};
        transport.async_declare(x, [](std::error_code) {});
        transport.async_declare(q, [](std::error_code) {});
        transport.async_bind(b, [&](std::error_code ec) {
            expect(!ec, "topology");
            declared = true;
        });
        run_until(io, [&] { return declared; });
        lb::consume_options o;
        o.queue = "access";
        o.prefetch = 1000;
        transport.async_consume(
            o,
            [this](lb::delivery d) {
                ++received;
                transport.async_ack(d, [](std::error_code) {});
            },
            [](std::error_code ec, std::string) { expect(!ec, "consume"); });
    }
};

/// Drains `rows` rows; with `store_pool`, the relay's store calls run on a thread pool of one.
double drain_letterbox(std::size_t rows, bool store_pool) {
    scratch s("drain");
    auto db = open_database(s.file("drain.db"));
    lb::sqlite::outbox_store outbox(db);
    lb::message_id_generator ids;
    const auto now = std::chrono::system_clock::now();
    for (std::size_t i = 0; i < rows;) {
        auto uow = db.begin();
        for (std::size_t j = 0; j < 1000 && i < rows; ++j, ++i)
            expect(!outbox.add(uow, enrollment_event(ids, static_cast<std::int64_t>(i)), now),
                   "outbox add");
        expect(!uow.commit(), "commit");
    }

    broker_rig rig;
    std::optional<boost::asio::thread_pool> pool;
    auto options = drain_options();
    if (store_pool)
        options.store_executor = pool.emplace(1).get_executor();
    relay_type relay(outbox, rig.transport, rig.clock, options);
    const auto t0 = wall::now();
    relay.async_run([](std::error_code) {});
    run_until(rig.io, [&] { return relay.counters().published >= rows; });
    const double rate = rows / seconds_since(t0);
    run_until(rig.io, [&] { return rig.received >= rows; });
    relay.stop();
    rig.io.restart();
    rig.io.run_for(1s);
    if (pool)
        pool->join();
    std::error_code ec;
    const auto stats = outbox.stats(now, ec);
    if (stats.published != rows || rig.received != rows)
        std::fprintf(stderr, "drain: published %zu, pending %zu, delivered %zu of %zu\n",
                     stats.published, stats.pending, rig.received, rows);
    expect(stats.published == rows, "every row drained");
    expect(rig.received == rows, "every row delivered");
    return rate;
}

double drain_bare(std::size_t rows) {
    broker_rig rig;
    lb::message_id_generator ids;
    std::vector<lb::message> messages;
    for (std::size_t i = 0; i < rows; ++i)
        messages.push_back(enrollment_event(ids, static_cast<std::int64_t>(i)).msg);

    std::size_t next = 0;
    std::size_t confirmed = 0;
    std::function<void()> publish_one = [&] {
        const std::size_t i = next++;
        rig.transport.async_publish(messages[i], [&](std::error_code ec) {
            expect(!ec, "bare publish");
            ++confirmed;
            if (next < rows)
                publish_one();
        });
    };
    const auto t0 = wall::now();
    for (std::size_t i = 0; i < drain_options().window && next < rows; ++i)
        publish_one();
    run_until(rig.io, [&] { return confirmed >= rows; });
    const double rate = rows / seconds_since(t0);
    run_until(rig.io, [&] { return rig.received >= rows; });
    expect(rig.received == rows, "every bare message delivered");
    return rate;
}

// ---- latency -----------------------------------------------------------------------------

struct latencies {
    double p50_us = 0;
    double p90_us = 0;
    double p99_us = 0;
    double p999_us = 0;
};

latencies percentiles(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    if (v.empty())
        return {};
    auto at = [&](std::size_t per_mille) {
        return v[std::min(v.size() - 1, v.size() * per_mille / 1000)];
    };
    return {at(500), at(900), at(990), at(999)};
}

double micros_since(wall::time_point t0) {
    return std::chrono::duration<double, std::micro>(wall::now() - t0).count();
}

latencies latency_outbox(std::size_t commits) {
    scratch s("latency");
    auto db = open_database(s.file("latency.db"));
    lb::sqlite::outbox_store outbox(db);
    lb::message_id_generator ids;
    broker_rig rig;
    auto options = drain_options();
    options.poll_interval = 10s; // only the after-commit wake-up can explain a fast publish
    relay_type relay(outbox, rig.transport, rig.clock, options);
    relay.async_run([](std::error_code) {});

    std::vector<double> samples;
    for (std::size_t i = 0; i < commits; ++i) {
        const auto before = relay.counters().published;
        const auto event = enrollment_event(ids, static_cast<std::int64_t>(i));
        const auto t0 = wall::now();
        auto uow = db.begin();
        auto ec = insert_enrollment(uow, static_cast<std::int64_t>(i), event.aggregate_id);
        if (!ec)
            ec = outbox.add(uow, event, rig.clock.wall_now());
        if (!ec)
            ec = uow.on_commit(relay.waker());
        if (!ec)
            ec = uow.commit();
        expect(!ec, "letterbox commit");
        // Confirmed: the relay saw the broker's confirm (and marked the row).
        const auto deadline = t0 + 1s;
        while (relay.counters().published == before && wall::now() < deadline) {
            rig.io.restart();
            rig.io.run_one_for(1ms);
        }
        samples.push_back(micros_since(t0));
    }
    relay.stop();
    rig.io.restart();
    rig.io.run_for(1s);
    expect(relay.counters().published == commits, "every commit published");
    return percentiles(samples);
}

latencies latency_naive(std::size_t commits) {
    scratch s("latency-naive");
    auto db = open_database(s.file("naive.db"));
    lb::message_id_generator ids;
    broker_rig rig;
    std::vector<double> samples;
    for (std::size_t i = 0; i < commits; ++i) {
        const auto event = enrollment_event(ids, static_cast<std::int64_t>(i));
        const auto t0 = wall::now();
        {
            auto uow = db.begin();
            auto ec = insert_enrollment(uow, static_cast<std::int64_t>(i), event.aggregate_id);
            if (!ec)
                ec = uow.commit();
            expect(!ec, "naive commit");
        }
        bool confirmed = false;
        rig.transport.async_publish(event.msg, [&](std::error_code) { confirmed = true; });
        run_until(rig.io, [&] { return confirmed; });
        samples.push_back(micros_since(t0));
    }
    return percentiles(samples);
}

// ---- inbox -------------------------------------------------------------------------------

void grant(const lb::message& m, lb::sqlite::unit_of_work& uow) {
    std::error_code ec;
    auto st =
        uow.connection().prepare("INSERT INTO grants(message_id, enrollment) VALUES (?1, ?2)", ec);
    st->bind_text(1, lb::to_string(m.id));
    st->bind_int64(2, 7);
    if (auto failed = st->execute())
        throw lb::error(failed, "grant");
}

std::vector<lb::message> inbox_messages(std::size_t n) {
    lb::message_id_generator ids; // time-ordered, as a publisher's default generator gives
    std::vector<lb::message> v;
    for (std::size_t i = 0; i < n; ++i)
        v.push_back(enrollment_event(ids, static_cast<std::int64_t>(i)).msg);
    return v;
}

lb::sqlite::database grants_database(const std::string& path) {
    auto db = lb::sqlite::database::open(path);
    auto uow = db.begin();
    expect(!uow.connection().exec(
               "CREATE TABLE grants(message_id TEXT NOT NULL, enrollment INTEGER)") &&
               !uow.commit(),
           "create the grants table");
    return db;
}

double inbox_idempotent(std::size_t n) {
    scratch s("inbox");
    auto db = grants_database(s.file("inbox.db"));
    lb::sqlite::inbox_store inbox(db);
    lb::steady_clock clock;
    auto h = lb::idempotent(
        &grant, inbox, [&] { return db.begin(); }, "access", clock);
    const auto messages = inbox_messages(n);
    const auto t0 = wall::now();
    for (const auto& m : messages)
        if (h(m))
            expect(false, "idempotent handler");
    const double rate = n / seconds_since(t0);
    expect(h.stats().processed == n, "every message processed once");
    return rate;
}

double inbox_plain(std::size_t n) {
    scratch s("inbox-plain");
    auto db = grants_database(s.file("plain.db"));
    const auto messages = inbox_messages(n);
    const auto t0 = wall::now();
    for (const auto& m : messages) {
        auto uow = db.begin();
        grant(m, uow);
        if (uow.commit())
            expect(false, "plain commit");
    }
    return n / seconds_since(t0);
}

// A consumer with group commit of 100 over the in-memory transport: `n` messages in its queue,
// timed from the consumer's start to the last ack. With `with_inbox`, each message records its
// key in the SQLite inbox with the effect; without, the same handler has no key to record.
double inbox_group_commit(std::size_t n, bool with_inbox) {
    scratch s(with_inbox ? "group" : "group-plain");
    auto db = grants_database(s.file("grants.db"));
    lb::sqlite::inbox_store inbox(db);
    boost::asio::io_context io;
    lb::steady_clock clock;
    lb::in_memory::broker broker{io.get_executor(), clock};
    lb::in_memory::transport transport{broker, "bench"};
    std::size_t done = 0;
    transport.async_declare(lb::topology::queue{.name = "grants"},
                            [&](std::error_code ec) { done += ec ? 0 : 1; });
    for (auto m : inbox_messages(n)) {
        m.exchange.clear();
        m.routing_key = "grants";
        transport.async_publish(std::move(m), [&](std::error_code ec) { done += ec ? 0 : 1; });
    }
    run_until(io, [&] { return done == n + 1; });
    expect(done == n + 1, "group: every message queued");

    const auto keyed = lb::idempotent(
        &grant, inbox, [&] { return db.begin(); }, "access", clock);
    auto h =
        with_inbox
            ? keyed
            : keyed.with_key([](const lb::message&) { return std::optional<lb::message_id>{}; })
                  .on_missing_key(lb::idempotency_key::missing_key_action::handle_without_dedup);
    lb::consumer_options o;
    o.consume.queue = "grants";
    o.consume.prefetch = 200;
    o.group_commit = {.max_messages = 100, .max_delay = 5ms};
    lb::consumer c(transport, h, o);
    const auto t0 = wall::now();
    c.async_start([](std::error_code ec, std::string) { expect(!ec, "group: consume"); });
    run_until(io, [&] { return c.stats().acked == n; });
    const double rate = n / seconds_since(t0);
    const auto stats = h.stats();
    expect(c.stats().acked == n, "group: every message acked");
    expect((with_inbox ? stats.processed : stats.unkeyed) == n, "group: every effect committed");
    return rate;
}

// The floor of the group row: its transactions in raw sqlite3 calls, with no consumer, no
// transport and none of letterbox's code: a transaction per 100 messages, each message in a
// savepoint, the effect's INSERT, and with `with_inbox` the INSERT that `inbox_store` runs, on
// the table letterbox's schema creates. Its ratio prices the record against the effect alone,
// without what the consumer and the transport add to both sides of the group row.
double raw_group(std::size_t n, bool with_inbox) {
    scratch s(with_inbox ? "raw-group" : "raw-group-plain");
    { auto created = grants_database(s.file("raw.db")); } // letterbox's schema, and `grants`
    sqlite3* db = open_raw(s.file("raw.db"));
    sqlite3_stmt* begin = prepare_or_die(db, "BEGIN IMMEDIATE");
    sqlite3_stmt* commit = prepare_or_die(db, "COMMIT");
    sqlite3_stmt* savepoint = prepare_or_die(db, "SAVEPOINT message");
    sqlite3_stmt* release = prepare_or_die(db, "RELEASE message");
    sqlite3_stmt* effect =
        prepare_or_die(db, "INSERT INTO grants(message_id, enrollment) VALUES (?1, 7)");
    sqlite3_stmt* record = prepare_or_die(
        db, "INSERT INTO letterbox_inbox (consumer_id, message_id, recorded_at) VALUES ('access', "
            "?1, ?2) ON CONFLICT DO NOTHING");
    std::vector<std::string> texts;
    const auto messages = inbox_messages(n);
    for (const auto& m : messages)
        texts.push_back(lb::to_string(m.id));
    auto step = [db](sqlite3_stmt* st) {
        step_or_die(db, st);
    };
    const std::int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    const auto t0 = wall::now();
    for (std::size_t i = 0; i < n; ++i) {
        if (i % 100 == 0)
            step(begin);
        step(savepoint);
        if (with_inbox) {
            sqlite3_bind_blob(record, 1, messages[i].id.data, 16, SQLITE_STATIC);
            sqlite3_bind_int64(record, 2, now_us + static_cast<std::int64_t>(i));
            step(record);
        }
        sqlite3_bind_text(effect, 1, texts[i].data(), static_cast<int>(texts[i].size()),
                          SQLITE_STATIC);
        step(effect);
        step(release);
        if (i % 100 == 99 || i + 1 == n)
            step(commit);
    }
    const double rate = n / seconds_since(t0);
    for (auto* st : {begin, commit, savepoint, release, effect, record})
        sqlite3_finalize(st);
    sqlite3_close(db);
    return rate;
}

} // namespace

int main(int argc, char** argv) {
    std::size_t rows = 20000;
    int repeat = 5;
    std::string only;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--rows") == 0)
            rows = std::strtoull(argv[i + 1], nullptr, 10);
        else if (std::strcmp(argv[i], "--repeat") == 0)
            repeat = std::atoi(argv[i + 1]);
        else if (std::strcmp(argv[i], "--only") == 0)
            only = argv[i + 1];
    }
    const auto runs = [&](const char* row) {
        return only.empty() || only == row;
    };
    std::printf("bench_outbox: %zu rows, %d repeats, SQLite %s (WAL, synchronous=NORMAL), "
                "time-ordered message ids (version 7)\n\n",
                rows, repeat, sqlite3_libversion());

    const bench::machine_load load;
    bench::rounds a, ar, d, dp, db, ii, ip, gi, gp, ri, rp;
    std::vector<double> p50, p90, p99, p999, n50, n90, n99, n999;
    const std::size_t drain_rows = rows * 5;
    const std::size_t commits = std::min<std::size_t>(rows, 2000);
    for (int r = 0; r < repeat; ++r) {
        if (runs("append")) {
            a.add(append_letterbox(rows));
            ar.add(append_raw(rows));
        }
        if (runs("drain"))
            d.add(drain_letterbox(drain_rows, false));
        if (runs("drain-pool"))
            dp.add(drain_letterbox(drain_rows, true));
        if (runs("drain") || runs("drain-pool"))
            db.add(drain_bare(drain_rows));
        if (runs("inbox")) {
            ii.add(inbox_idempotent(rows));
            ip.add(inbox_plain(rows));
        }
        if (runs("group")) {
            gi.add(inbox_group_commit(rows, true));
            gp.add(inbox_group_commit(rows, false));
            ri.add(raw_group(rows, true));
            rp.add(raw_group(rows, false));
        }
        if (!runs("latency"))
            continue;
        const auto lo = latency_outbox(commits);
        const auto ln = latency_naive(commits);
        p50.push_back(lo.p50_us);
        p90.push_back(lo.p90_us);
        p99.push_back(lo.p99_us);
        p999.push_back(lo.p999_us);
        n50.push_back(ln.p50_us);
        n90.push_back(ln.p90_us);
        n99.push_back(ln.p99_us);
        n999.push_back(ln.p999_us);
    }

    const double append_ratio = a.mid() / ar.mid();
    const double inbox_overhead = ip.mid() / ii.mid() - 1.0;
    const double group_ratio = gi.mid() / gp.mid();
    std::printf("%-10s %14s %6s %14s %6s %8s   %s\n", "row (medians)", "letterbox", "spread",
                "baseline", "spread", "ratio", "target");
    // One row: both medians with the spread of their rounds, then the comparison.
    auto row = [](const char* name, const bench::rounds& l, const char* l_unit,
                  const bench::rounds& b, const char* b_unit) {
        std::printf("%-10s %8.0f %-5s %6s %8.0f %-5s %6s ", name, l.mid(), l_unit,
                    l.spread().c_str(), b.mid(), b_unit, b.spread().c_str());
    };
    if (runs("append")) {
        row("append", a, "tx/s", ar, "tx/s");
        std::printf("%7.2fx   >= 0.90x: %s\n", append_ratio,
                    append_ratio >= 0.9 ? "met" : "NOT met");
    }
    const auto drain_row = [&](const char* name, const bench::rounds& rounds) {
        row(name, rounds, "row/s", db, "msg/s");
        std::printf("%7.2fx   >= 100000 rows/s: %s\n", rounds.mid() / db.mid(),
                    rounds.mid() >= 100000 ? "met" : "NOT met");
    };
    if (runs("drain"))
        drain_row("drain", d);
    if (runs("drain-pool"))
        drain_row("drain-pool", dp);
    if (runs("inbox")) {
        row("inbox", ii, "msg/s", ip, "msg/s");
        std::printf("%+6.1f%%   overhead <= 5%%: %s\n", inbox_overhead * 100,
                    inbox_overhead <= 0.05 ? "met" : "NOT met");
    }
    if (runs("group")) {
        row("group", gi, "msg/s", gp, "msg/s");
        std::printf("%7.2fx   >= 0.95x: %s\n", group_ratio,
                    group_ratio >= 0.95 ? "met" : "NOT met");
        row("  floor", ri, "msg/s", rp, "msg/s");
        std::printf(
            "%7.2fx   raw SQLite, the same transactions: the record against the effect alone\n",
            ri.mid() / rp.mid());
    }
    if (!runs("latency")) {
        load.end();
        return failures == 0 ? 0 : 1;
    }
    std::printf("%-10s p50 %7.0f us   p99 %7.0f us   (naive dual write: p50 %.0f us, p99 %.0f "
                "us)   p99 <= 5 ms: %s\n",
                "latency", median(p50), median(p99), median(n50), median(n99),
                median(p99) <= 5000 ? "met" : "NOT met");
    // For benchmarks/plots/plot.sh: the latency percentiles (medians over the repeats), in us.
    std::printf("\n");
    std::printf("plot relay_latency p50 %.0f %.0f\n", median(p50), median(n50));
    std::printf("plot relay_latency p90 %.0f %.0f\n", median(p90), median(n90));
    std::printf("plot relay_latency p99 %.0f %.0f\n", median(p99), median(n99));
    std::printf("plot relay_latency p99.9 %.0f %.0f\n", median(p999), median(n999));
    std::printf("\n");
    load.end();
    return failures == 0 ? 0 : 1;
}
