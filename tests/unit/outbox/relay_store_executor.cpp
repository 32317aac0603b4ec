// SPDX-License-Identifier: BSL-1.0
// outbox_relay with `relay_options::store_executor`: the store calls run on a thread pool of
// their own, against a real SQLite file, while the relay publishes on its I/O thread. The relay's
// other tests (outbox_relay.cpp, relay_on_sqlite.cpp) make the store calls on the relay's
// executor.

#include <letterbox/outbox/outbox_relay.hpp>

#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox/relay_options.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/outbox_store.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "support/outbox_store_spy.hpp"
#include "support/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace unit_outbox_relay_store_executor {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
using letterbox::message_id;
using test_support::outbox_call;

using spy = test_support::outbox_store_spy<letterbox::sqlite::outbox_store>;
using relay_type =
    letterbox::outbox_relay<spy, letterbox::in_memory::transport, letterbox::steady_clock>;

constexpr const char* exchange_name = "orders";
constexpr const char* queue_name = "orders.all";

/// Holds a store call up: the first call that `enter`s waits until the test `release`s it (or
/// 30 s pass, so that a failing test cannot hang).
struct gate {
    std::mutex m;
    std::condition_variable cv;
    bool entered = false;
    bool open = false;

    void enter() {
        std::unique_lock lock(m);
        if (entered)
            return;
        entered = true;
        cv.notify_all();
        cv.wait_for(lock, 30s, [this] { return open; });
    }
    bool has_entered() {
        std::lock_guard lock(m);
        return entered;
    }
    void release() {
        std::lock_guard lock(m);
        open = true;
        cv.notify_all();
    }
};

/// A SQLite outbox with `rows` events over `aggregates` aggregates, a broker whose queue
/// `orders.all` takes them, a consumer that acks and records each delivery, and a thread pool
/// of one thread for the store calls.
struct world {
    test_support::temp_directory dir{"relay-store-executor"};
    letterbox::sqlite::database db = letterbox::sqlite::database::open(dir.file("outbox.db"));
    letterbox::sqlite::outbox_store outbox{db};
    spy store{&outbox};
    std::mutex seen_m; // guards the two below: the spy's hook runs on the pool's thread
    std::set<std::thread::id> store_threads;
    std::size_t store_calls = 0;

    boost::asio::io_context io;
    letterbox::steady_clock clock;
    letterbox::in_memory::broker broker{io.get_executor(), clock};
    letterbox::in_memory::transport transport{broker, "relay"};
    letterbox::in_memory::transport consumer{broker, "consumer"};
    boost::asio::thread_pool pool{1};

    std::map<message_id, std::pair<int, int>> added; // id -> (aggregate, index in it)
    std::vector<message_id> delivered;

    world(int rows, int aggregates) {
        auto conn = broker.connect("setup");
        auto ch = conn.open_channel();
        REQUIRE_FALSE(ch.exchange_declare(letterbox::topology::exchange{
            .name = exchange_name, .type = letterbox::topology::exchange_type::topic}));
        REQUIRE_FALSE(ch.queue_declare(letterbox::topology::queue{.name = queue_name}));
        REQUIRE_FALSE(ch.queue_bind(queue_name, exchange_name, "order.#"));
        conn.close();

        letterbox::message_id_generator ids{7};
        auto uow = db.begin();
        for (int i = 0; i < rows; ++i) {
            letterbox::outbox_entry e;
            e.msg.id = ids();
            e.msg.exchange = exchange_name;
            e.msg.routing_key = "order.placed";
            e.aggregate_type = "order";
            e.aggregate_id = std::to_string(i % aggregates);
            added[e.msg.id] = {i % aggregates, i / aggregates};
            REQUIRE_FALSE(outbox.add(uow, e, clock.wall_now()));
        }
        REQUIRE_FALSE(uow.commit());

        letterbox::consume_options o;
        o.queue = queue_name;
        o.prefetch = 1000;
        bool started = false;
        consumer.async_consume(
            o,
            [this](letterbox::delivery d) {
                delivered.push_back(d.msg.id);
                consumer.async_ack(d, [](std::error_code) {});
            },
            [&started](std::error_code ec, std::string) {
                REQUIRE_FALSE(ec);
                started = true;
            });
        REQUIRE(run_until([&] { return started; }));

        // Set after the rows are added, so that only the relay's calls are seen.
        store.before = [this](outbox_call, std::size_t) {
            std::lock_guard lock(seen_m);
            store_threads.insert(std::this_thread::get_id());
            ++store_calls;
        };
    }

    ~world() { pool.join(); }

    letterbox::relay_options options() {
        letterbox::relay_options o;
        o.owner = "relay-a";
        o.batch_size = 50;
        o.window = 50;
        o.seed = 5;
        o.store_executor = pool.get_executor();
        return o;
    }

    /// Runs the I/O thread's handlers until `done()` holds, for at most 30 s.
    bool run_until(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        while (!done()) {
            if (std::chrono::steady_clock::now() >= deadline)
                return false;
            io.restart();
            if (io.run_one_for(10ms) == 0)
                std::this_thread::yield();
        }
        return true;
    }

    /// Runs every handler that is ready on the I/O thread, and those they post.
    void run_ready() {
        io.restart();
        for (int i = 0; i < 100'000 && io.poll() != 0; ++i) {
        }
    }

    letterbox::outbox_stats stats() {
        std::error_code ec;
        auto s = outbox.stats(clock.wall_now(), ec);
        REQUIRE_FALSE(ec);
        return s;
    }

    /// Holds up the first store call `which` at the gate.
    void hold(outbox_call which, gate& g) {
        auto note = std::move(store.before);
        store.before = [note = std::move(note), which, &g](outbox_call call, std::size_t rows) {
            note(call, rows);
            if (call == which)
                g.enter();
        };
    }
};

} // namespace

TEST_CASE("with a store executor the relay makes every store call there and publishes every row "
          "once, in order per aggregate",
          "[outbox][outbox_relay][sqlite][threads]") {
    constexpr int rows = 600;
    world w(rows, 7);
    relay_type relay(w.store, w.transport, w.clock, w.options());
    std::optional<std::error_code> finished;
    relay.async_run([&](std::error_code ec) { finished = ec; });

    REQUIRE(w.run_until([&] {
        return relay.counters().published == static_cast<std::size_t>(rows) &&
               w.delivered.size() == static_cast<std::size_t>(rows);
    }));
    relay.stop();
    REQUIRE(w.run_until([&] { return finished.has_value(); }));
    CHECK_FALSE(*finished);

    {
        std::lock_guard lock(w.seen_m);
        CHECK(w.store_calls >= 2 * rows / 50); // a claim and a batch of marks per 50 rows
        REQUIRE(w.store_threads.size() == 1);
        CHECK(*w.store_threads.begin() != std::this_thread::get_id()); // not the I/O thread
    }
    const auto s = w.stats();
    CHECK(s.published == static_cast<std::size_t>(rows));
    CHECK(s.pending == 0);

    std::set<message_id> once(w.delivered.begin(), w.delivered.end());
    CHECK(once.size() == w.delivered.size());
    std::map<int, int> last; // aggregate -> index of its last delivered event
    for (const auto& id : w.delivered) {
        const auto [aggregate, index] = w.added.at(id);
        auto [it, first] = last.try_emplace(aggregate, index);
        if (!first) {
            CHECK(index == it->second + 1);
            it->second = index;
        } else {
            CHECK(index == 0);
        }
    }
}

TEST_CASE("with a store executor the relay goes on publishing while a store call is held up",
          "[outbox][outbox_relay][sqlite][threads]") {
    world w(120, 120);
    gate marks;
    w.hold(outbox_call::mark_batch, marks);
    relay_type relay(w.store, w.transport, w.clock, w.options());
    std::optional<std::error_code> finished;
    relay.async_run([&](std::error_code ec) { finished = ec; });

    // The first batch of marks is held up in the store; meanwhile the I/O thread still
    // publishes at least the whole first claim, and the broker delivers it.
    REQUIRE(w.run_until([&] { return marks.has_entered() && w.delivered.size() >= 50; }));
    CHECK(relay.counters().published == 0);
    CHECK(w.stats().published == 0);

    marks.release();
    REQUIRE(w.run_until([&] { return relay.counters().published == 120; }));
    CHECK(w.stats().published == 120);
    relay.stop();
    REQUIRE(w.run_until([&] { return finished.has_value(); }));
    CHECK_FALSE(*finished);
}

TEST_CASE("with a store executor a stop or a destruction during a store call completes async_run "
          "only after the call returned",
          "[outbox][outbox_relay][sqlite][threads]") {
    const bool destroy = GENERATE(false, true);
    INFO((destroy ? "the relay is destroyed" : "the relay is stopped"));
    world w(20, 20);
    gate claim;
    w.hold(outbox_call::claim, claim);
    auto relay = std::make_unique<relay_type>(w.store, w.transport, w.clock, w.options());
    std::optional<std::error_code> finished;
    bool released = false;
    bool released_at_completion = false;
    relay->async_run([&](std::error_code ec) {
        finished = ec;
        released_at_completion = released;
    });

    REQUIRE(w.run_until([&] { return claim.has_entered(); }));
    if (destroy)
        relay.reset();
    else
        relay->stop();
    w.run_ready();
    CHECK_FALSE(finished.has_value()); // the claim is still in the store

    released = true;
    claim.release();
    REQUIRE(w.run_until([&] { return finished.has_value(); }));
    CHECK(released_at_completion);
    if (destroy) {
        CHECK(*finished == errc::closed);
    } else {
        CHECK_FALSE(*finished);
        CHECK(relay->counters().abandoned == 20); // claimed while stopping: left to the lease
        CHECK(relay->counters().published == 0);
    }
    CHECK(w.delivered.empty());
    const auto s = w.stats();
    CHECK(s.published == 0);
    CHECK(s.pending == 20);
}

} // namespace unit_outbox_relay_store_executor
