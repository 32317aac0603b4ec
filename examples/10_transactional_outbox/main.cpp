// SPDX-License-Identifier: BSL-1.0
//
// Example 10: the transactional outbox and the idempotent consumer, on SQLite.
//
// The incident of the seeds: an enrollment service confirms an enrollment, the broker is
// unreachable for a moment, and the event that should grant access to the course is lost.
//
// 1. The naive dual write (commit, then publish) under the outage: the enrollment exists, the
//    publish fails, and the event is lost for good.
// 2. The outbox: the enrollment and its `enrollment.confirmed` event are committed in one
//    SQLite transaction. The relay cannot reach the broker, backs off, and publishes the event
//    once the broker returns. The access service applies it through its inbox, once, and skips
//    a redelivered copy.
//
// Needs: the `sqlite` component (letterbox::sqlite). Runs in real time (a few hundred ms) on one
// I/O thread, with C++20 coroutines on Boost.Asio; the relay's store calls run on a thread of
// their own (`relay_options::store_executor`). Its database files live in a temporary
// directory that it removes.
// Run: build/<dir>/examples/example_10_transactional_outbox.
#include <letterbox/sqlite.hpp>

#include <letterbox/consumer.hpp>
#include <letterbox/letterbox.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/outbox/outbox_relay.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <system_error>
#include <unistd.h>

namespace asio = boost::asio;
using namespace letterbox;
using namespace std::chrono_literals;
using relay_type = outbox_relay<sqlite::outbox_store, in_memory::transport, steady_clock>;

int failures = 0;
void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what);
        ++failures;
    }
}

// The enrollment service's business write.
std::error_code insert_enrollment(sqlite::unit_of_work& uow, std::int64_t id,
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

std::int64_t count(sqlite::database& db, const char* sql) {
    auto uow = db.begin();
    std::error_code ec;
    auto st = uow.connection().prepare(sql, ec);
    return !ec && st->step(ec) ? st->column_int64(0) : -1;
}

//[confirm_enrollment
// Confirms an enrollment: the business row and its event commit together, or not at all.
std::error_code confirm_enrollment(sqlite::database& db, sqlite::outbox_store& outbox,
                                   relay_type& relay, message_id_generator& ids, std::int64_t id,
                                   const std::string& student, store_time now) {
    outbox_entry event;
    event.msg = make_message(ids, "enrollment.confirmed", "enrollments", "enrollment.confirmed",
                             nlohmann::json{{"enrollment", id}, {"student", student}});
    event.aggregate_type = "student";
    event.aggregate_id = student; // a student's events are published in order

    auto uow = db.begin();                             // BEGIN IMMEDIATE
    if (auto ec = insert_enrollment(uow, id, student)) // the business write...
        return ec;                                     // (rolled back on return)
    if (auto ec = outbox.add(uow, event, now))         // ...and its event, same txn
        return ec;
    if (auto ec = uow.on_commit(relay.waker())) // publish now, not at next poll
        return ec;
    return uow.commit();
}
//]

// GCC 12 misreports Asio's coroutine-frame allocation as mismatched new/delete (GCC bug 109224).
// Also for GCC 12: every argument of a `co_await`ed call below is a named variable, because
// GCC 12 mis-destroys class temporaries created inside a co_await expression.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// Waits (in real time, bounded) until `done()` holds.
asio::awaitable<bool> wait_until(std::function<bool()> done, std::chrono::milliseconds limit) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        timer.expires_after(5ms);
        co_await timer.async_wait(asio::use_awaitable);
    }
    co_return done();
}

asio::awaitable<void> declare_topology(in_memory::transport& t) {
    const topology::exchange enrollments{.name = "enrollments",
                                         .type = topology::exchange_type::topic};
    const topology::queue access{.name = "access.enrollments"};
    const topology::binding binding{"enrollments", "access.enrollments", "enrollment.#"};
    co_await t.async_declare(enrollments, asio::use_awaitable);
    co_await t.async_declare(access, asio::use_awaitable);
    co_await t.async_bind(binding, asio::use_awaitable);
}

asio::awaitable<void> run(const std::filesystem::path& dir) {
    auto ex = co_await asio::this_coro::executor;
    steady_clock clock;
    in_memory::broker broker(ex);
    in_memory::transport transport(broker, "enrollment-service");
    co_await declare_topology(transport);

    auto enrollment_db = sqlite::database::open((dir / "enrollment.db").string());
    sqlite::unit_of_work setup = enrollment_db.begin();
    if (auto ec = setup.connection().exec(
            "CREATE TABLE enrollments(id INTEGER PRIMARY KEY, student TEXT, course TEXT)"))
        throw letterbox::error(ec, "create the enrollments table");
    if (auto ec = setup.commit())
        throw letterbox::error(ec, "commit the enrollments table");
    sqlite::outbox_store outbox(enrollment_db);
    message_id_generator ids;

    // The access service: its own database, its inbox, and a consumer that acks after commit.
    auto access_db = sqlite::database::open((dir / "access.db").string());
    sqlite::unit_of_work access_setup = access_db.begin();
    if (auto ec =
            access_setup.connection().exec("CREATE TABLE grants(enrollment INTEGER, student TEXT)"))
        throw letterbox::error(ec, "create the grants table");
    if (auto ec = access_setup.commit())
        throw letterbox::error(ec, "commit the grants table");
    sqlite::inbox_store inbox(access_db);
    in_memory::transport access_transport(broker, "access-service");

    //[idempotent_consumer
    auto grant_access = [](const message& m, sqlite::unit_of_work& uow) {
        const auto event = decode_payload<nlohmann::json>(m); // throws on a malformed body
        std::error_code ec;
        auto st =
            uow.connection().prepare("INSERT INTO grants(enrollment, student) VALUES (?1, ?2)", ec);
        if (ec)
            throw letterbox::error(ec, "prepare");
        st->bind_int64(1, event.at("enrollment").get<std::int64_t>());
        st->bind_text(2, event.at("student").get<std::string>());
        if (auto failed = st->execute())
            throw letterbox::error(failed, "insert grant");
        return uow.on_commit([event] {
            std::printf("access-service: access granted to %s for enrollment %lld\n",
                        event.at("student").get<std::string>().c_str(),
                        static_cast<long long>(event.at("enrollment").get<std::int64_t>()));
        });
    };
    auto handler = idempotent(
        grant_access, inbox, [&] { return access_db.begin(); }, "access-service", clock);
    consumer access_consumer(access_transport, handler,
                             consumer_options{.consume = {.queue = "access.enrollments"}});
    co_await access_consumer.async_start(asio::use_awaitable);
    //]

    // ---- 1. The naive dual write: commit, then publish ------------------------------------
    std::printf("== naive dual write ==\n");
    broker.go_down(); // a failover: the broker is unreachable for a moment
    {
        sqlite::unit_of_work uow = enrollment_db.begin();
        if (auto ec = insert_enrollment(uow, 1, "ana"))
            throw letterbox::error(ec, "insert enrollment 1");
        if (auto ec = uow.commit())
            throw letterbox::error(ec, "commit enrollment 1");
        std::printf("enrollment-service: enrollment 1 committed\n");
        message event = make_message(ids, "enrollment.confirmed", "enrollments",
                                     "enrollment.confirmed", nlohmann::json{{"enrollment", 1}});
        auto [ec] = co_await transport.async_publish(event, asio::as_tuple(asio::use_awaitable));
        std::printf("enrollment-service: publish failed: %s\n", ec.message().c_str());
        check(ec == errc::connection_closed, "the naive publish fails");
    }
    broker.come_back();
    std::printf("the event of enrollment 1 is LOST: enrollments %lld, access grants %lld\n",
                static_cast<long long>(count(enrollment_db, "SELECT COUNT(*) FROM enrollments")),
                static_cast<long long>(count(access_db, "SELECT COUNT(*) FROM grants")));

    // ---- 2. The transactional outbox ----------------------------------------------------------
    std::printf("\n== transactional outbox ==\n");
    //[run_relay
    // SQLite blocks: the relay makes its store calls on a thread of their own, never on the
    // I/O thread. The pool outlives the relay, whose async_run completes after its last call.
    asio::thread_pool store_thread(1);
    relay_options options;
    options.store_executor = store_thread.get_executor();
    options.transport_retry = {.initial = 20ms, .multiplier = 2.0, .max = 100ms, .jitter = 0.2};
    relay_type relay(outbox, transport, clock, options);
    bool relay_stopped = false;
    relay.async_run([&](std::error_code ec) {
        check(!ec, "the relay stops cleanly");
        relay_stopped = true;
    });
    //]

    broker.go_down();
    std::error_code ec =
        confirm_enrollment(enrollment_db, outbox, relay, ids, 2, "bruno", clock.wall_now());
    check(!ec, "enrollment 2 commits");
    std::printf("enrollment-service: enrollment 2 and its event committed in one transaction\n");
    check(co_await wait_until([&] { return relay.counters().transport_failures >= 2; }, 2s),
          "the relay meets the outage");
    auto stats = outbox.stats(clock.wall_now(), ec);
    std::printf("relay: broker unreachable, backing off; event still pending (%zu pending, "
                "%zu parked)\n",
                stats.pending, stats.parked);
    broker.come_back();
    std::printf("broker: back\n");
    check(
        co_await wait_until(
            [&] { return handler.stats().processed == 1 && relay.counters().published == 1; }, 5s),
        "the event reaches the access service");
    stats = outbox.stats(clock.wall_now(), ec);
    std::printf("relay: enrollment.confirmed published once the broker returned (%llu "
                "published, %zu pending)\n",
                static_cast<unsigned long long>(relay.counters().published), stats.pending);

    // A redelivered copy (the relay republishes after a lost confirm; the broker requeues after
    // a consumer crash): same message id, so the inbox skips it.
    auto rows = outbox.list({}, ec);
    check(rows.size() == 1, "one outbox row");
    message copy = rows.at(0).msg;
    co_await transport.async_publish(copy, asio::use_awaitable);
    check(co_await wait_until([&] { return handler.stats().duplicates == 1; }, 2s),
          "the copy is seen");
    std::printf("access-service: a redelivered copy was skipped by the inbox; grants for "
                "enrollment 2: %lld\n",
                static_cast<long long>(
                    count(access_db, "SELECT COUNT(*) FROM grants WHERE enrollment = 2")));

    relay.stop();
    check(co_await wait_until([&] { return relay_stopped; }, 5s), "the relay stops");
    co_await transport.async_close(asio::use_awaitable);
    co_await access_transport.async_close(asio::use_awaitable);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

int main() {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("letterbox-example-10-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    asio::io_context io;
    asio::co_spawn(io, run(dir), [&](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::fprintf(stderr, "MISMATCH: %s\n", x.what());
                ++failures;
            }
        }
    });
    io.run();
    std::filesystem::remove_all(dir);
    return failures == 0 ? 0 : 1;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   == naive dual write ==
//   enrollment-service: enrollment 1 committed
//   enrollment-service: publish failed: connection closed
//   the event of enrollment 1 is LOST: enrollments 1, access grants 0
//   == transactional outbox ==
//   enrollment-service: enrollment 2 and its event committed in one transaction
//   relay: broker unreachable, backing off; event still pending \(1 pending, 0 parked\)
//   broker: back
//   access-service: access granted to bruno for enrollment 2
//   relay: enrollment\.confirmed published once the broker returned \(1 published, 0 pending\)
//   access-service: a redelivered copy was skipped by the inbox; grants for enrollment 2: 1
