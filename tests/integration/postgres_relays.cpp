// SPDX-License-Identifier: BSL-1.0
// Many relays, really (issue 23): four relay processes drain one PostgreSQL outbox while
// producer threads keep writing to it, and a consumer on the real broker records every message.
//
// The relays are this executable started again on the hidden case `kill9 child: relay`
// (kill9_children.cpp), told to run on PostgreSQL until SIGTERM: each runs an `outbox_relay`
// over `postgres::outbox_store` with its store calls on a `boost::asio::thread_pool` of one
// thread (`relay_options::store_executor`), an `outbox_listener` on its I/O thread that calls
// `relay.waker()` when a unit of work commits rows (in this process), and the real
// `amqp::transport`. Their poll interval is long (2 s), so it is the announcements that keep
// them busy. The producers write each event in a unit of work with a business row, to
// aggregates drawn at random, so that several units write to one aggregate at once.
//
// Checked at the end: every row is published and consumed at least once; per aggregate, the
// first deliveries come in outbox sequence order; each row was marked published by exactly one
// relay; and the publishes beyond the rows (duplicates the consumer saw) are no more than the
// publishes the relays themselves counted as not settling a row (a confirm lost or given up, a
// lease taken over, a mark refused because another relay owned the row by then). The
// duplicates are counted and printed, with the relays' counters.
//
// Size: 4,000 rows of 100 aggregates by default, which takes about a minute under ASan+UBSan on
// 2 cores; 20,000 rows of 500 aggregates with LETTERBOX_EXTENDED=1 (measured in
// docs/testing.md, "Many relays on PostgreSQL"). LETTERBOX_RELAYS_ROWS=n and
// LETTERBOX_RELAYS_AGGREGATES=m override both. The relays' lease is 10 s, which no publish
// here comes near; LETTERBOX_RELAYS_LEASE_MS=n shortens it to provoke lease takeovers, and
// with them duplicates, which the same checks must then account for.

#include <letterbox/amqp/transport.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/outbox_store.hpp>
#include <letterbox/postgres/param.hpp>
#include <letterbox/postgres/unit_of_work.hpp>

#include <letterbox/consumer.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/testing/seed.hpp>
#include <letterbox/topology/queue.hpp>

#include "amqp_broker.hpp"
#include "integration/postgres_server.hpp"
#include "kill9_support.hpp"
#include "support/temp_directory.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace integration_postgres_relays {

namespace {

using namespace std::chrono_literals;
namespace pg = letterbox::postgres;

constexpr int relays = 4;
constexpr int producers = 4;

/// Rows and aggregates of the run (see the top of the file).
struct workload {
    int rows = 0;
    int aggregates = 0;
};

workload sizes() {
    const bool extended = kill9::env("LETTERBOX_EXTENDED") == "1";
    workload w{extended ? 20000 : 4000, extended ? 500 : 100};
    w.rows = static_cast<int>(kill9::env_int("LETTERBOX_RELAYS_ROWS", w.rows));
    w.aggregates = static_cast<int>(kill9::env_int("LETTERBOX_RELAYS_AGGREGATES", w.aggregates));
    return w;
}

double seconds(std::chrono::steady_clock::duration d) {
    return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) /
           1000.0;
}

/// The consumer in this process: a `letterbox::consumer` on its own I/O thread that acks every
/// delivery and records it, in arrival order.
class recording_consumer {
public:
    struct seen {
        letterbox::message_id id;
        bool redelivered = false;
    };

    explicit recording_consumer(const std::string& queue)
        : transport_(io_.get_executor(), amqp_test::broker_url(), transport_options())
        , consumer_(transport_, handler{this}, consumer_options(queue)) {
        consumer_.async_start([this](std::error_code ec, const std::string& tag) {
            std::lock_guard lock(mutex_);
            started_ = ec;
            tag_ = tag;
        });
        thread_ = std::thread([this] { io_.run(); });
    }
    recording_consumer(const recording_consumer&) = delete;
    recording_consumer& operator=(const recording_consumer&) = delete;
    ~recording_consumer() {
        if (thread_.joinable()) {
            io_.stop();
            thread_.join();
        }
    }

    /// Whether it started (and how), once it has.
    std::optional<std::error_code> started() const {
        std::lock_guard lock(mutex_);
        return started_;
    }
    /// Distinct messages received so far, and deliveries.
    std::size_t distinct() const { return distinct_.load(); }
    std::size_t deliveries() const {
        std::lock_guard lock(mutex_);
        return seen_.size();
    }
    /// Everything received, in order.
    std::vector<seen> received() const {
        std::lock_guard lock(mutex_);
        return seen_;
    }

    /// Waits (at most `timeout`) until nothing is in flight and the queue is empty
    /// (`consumer::async_wait_idle`); the outcome, or nothing on timeout.
    std::optional<std::error_code> wait_idle(std::chrono::milliseconds timeout) {
        return run_on_io(timeout, [this](auto done) { consumer_.async_wait_idle(done); });
    }
    /// Cancels the consumer, settles what it holds, closes the transport, and ends the thread.
    bool shut_down(std::chrono::milliseconds timeout) {
        std::string tag;
        {
            std::lock_guard lock(mutex_);
            tag = tag_;
        }
        const auto stopped =
            run_on_io(timeout, [this, tag](auto done) { consumer_.async_shutdown(tag, done); });
        const auto closed = run_on_io(timeout, [this](auto done) { transport_.async_close(done); });
        io_.stop();
        thread_.join();
        return stopped.has_value() && closed.has_value();
    }

private:
    struct handler {
        recording_consumer* self;
        letterbox::middleware::disposition operator()(const letterbox::middleware::handling& x) {
            self->record(x.d.msg.id, x.d.redelivered);
            return letterbox::middleware::disposition::ack();
        }
    };

    static letterbox::amqp::transport_options transport_options() {
        letterbox::amqp::transport_options o;
        o.connection_name = "postgres-relays-consumer";
        return o;
    }
    static letterbox::consumer_options consumer_options(const std::string& queue) {
        letterbox::consumer_options o;
        o.consume.queue = queue;
        o.consume.prefetch = 500;
        return o;
    }

    void record(const letterbox::message_id& id, bool redelivered) {
        std::lock_guard lock(mutex_);
        seen_.push_back({id, redelivered});
        if (ids_.insert(id).second)
            ++distinct_;
    }

    /// Starts `op(done)` on the I/O thread and waits for `done(ec)`, at most `timeout`.
    template <class Op>
    std::optional<std::error_code> run_on_io(std::chrono::milliseconds timeout, Op op) {
        auto result = std::make_shared<std::optional<std::error_code>>();
        auto m = std::make_shared<std::mutex>();
        boost::asio::post(io_, [op, result, m]() mutable {
            op([result, m](std::error_code ec) {
                std::lock_guard lock(*m);
                *result = ec;
            });
        });
        kill9::wait_until(
            [&] {
                std::lock_guard lock(*m);
                return result->has_value();
            },
            timeout, 5ms);
        std::lock_guard lock(*m);
        return *result;
    }

    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
        io_.get_executor()};
    letterbox::amqp::transport transport_;
    letterbox::consumer<letterbox::amqp::transport, handler> consumer_;
    mutable std::mutex mutex_;
    std::optional<std::error_code> started_;
    std::string tag_;
    std::vector<seen> seen_;
    std::set<letterbox::message_id> ids_;
    std::atomic<std::size_t> distinct_{0};
    std::thread thread_;
};

/// A fresh queue of the test's own, that the broker forgets five minutes after its last use.
std::string declare_queue() {
    amqp_test::amqp_transport_fixture f;
    auto t = f.make();
    letterbox::topology::queue q;
    q.name = f.unique_name("postgres.relays");
    q.durable = false;
    q.arguments.set("x-expires", std::int64_t{300000});
    REQUIRE_FALSE(amqp_test::await(f, [&](auto done) { t.async_declare(q, done); }));
    (void)amqp_test::await(f, [&](auto done) { t.async_close(done); });
    return q.name;
}

/// Sums of the relays' counters.
struct relay_totals {
    std::map<std::string, std::uint64_t> sum;
    std::vector<std::uint64_t> published; // per relay

    void add(const std::map<std::string, std::uint64_t>& c) {
        for (const auto& [k, v] : c)
            sum[k] += v;
        published.push_back(c.count("published") ? c.at("published") : 0);
    }
    std::uint64_t operator[](const std::string& k) const {
        const auto it = sum.find(k);
        return it == sum.end() ? 0 : it->second;
    }
};

} // namespace

TEST_CASE("postgres relays: 4 relay processes drain one outbox while producers write, and every "
          "row is consumed, each aggregate in order, every duplicate one the relays counted",
          "[integration][postgres]") {
    const auto w = sizes();
    REQUIRE(w.rows > 0);
    REQUIRE(w.aggregates > 0);
    const auto seed =
        letterbox::testing::derive_seed(letterbox::testing::test_seed(), "postgres_relays");
    INFO("LETTERBOX_SEED=" << letterbox::testing::test_seed() << ", " << w.rows << " rows of "
                           << w.aggregates << " aggregates");
    test_support::scratch_schema schema;
    test_support::temp_directory dir;
    auto options = schema.options();
    options.application_name = "postgres-relays-producer";
    options.max_connections = producers + 2;
    auto db = pg::database::open(test_support::postgres_url(), options);
    pg::outbox_store outbox(db);
    {
        auto u = db.begin();
        REQUIRE_FALSE(u.connection().exec(
            "CREATE TABLE " + schema.name() +
            ".orders(id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, aggregate_id text NOT "
            "NULL, message_id uuid NOT NULL UNIQUE)"));
        REQUIRE_FALSE(u.commit());
    }
    const auto queue = declare_queue();
    recording_consumer consumer(queue);
    REQUIRE(kill9::wait_until([&] { return consumer.started().has_value(); }, 30s));
    REQUIRE_FALSE(*consumer.started());

    // The relays: long-lived children on the schema, until SIGTERM.
    const bool extended = kill9::env("LETTERBOX_EXTENDED") == "1";
    const auto limit = extended ? 1800s : 240s; // for the whole drain
    const std::chrono::milliseconds lease{kill9::env_int("LETTERBOX_RELAYS_LEASE_MS", 10000)};
    std::vector<std::unique_ptr<kill9::child_process>> children;
    std::vector<std::string> counter_files;
    const auto started = std::chrono::steady_clock::now();
    for (int r = 0; r < relays; ++r) {
        const auto owner = "postgres-relay-" + std::to_string(r) + "-" +
                           schema.name().substr(schema.name().size() - 8);
        counter_files.push_back(dir.file(owner + ".counters"));
        children.push_back(std::make_unique<kill9::child_process>(
            kill9::relay_child_test,
            std::map<std::string, std::string>{
                {kill9::env_store, "postgres"},
                {kill9::env_database, schema.name()},
                {kill9::env_owner, owner},
                {kill9::env_failpoint, ""},
                {kill9::env_seed, std::to_string(seed + static_cast<std::uint64_t>(r))},
                {kill9::env_run_until, "terminated"},
                {kill9::env_lease_ms, std::to_string(lease.count())},
                {kill9::env_poll_ms, "2000"},
                {kill9::env_batch, "50"},
                {kill9::env_window, "32"},
                {kill9::env_counters, counter_files.back()},
                {kill9::env_lifetime_s,
                 std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count() +
                                120)}},
            dir.file(owner + ".log")));
    }
    const auto relay_logs = [&] {
        std::ostringstream o;
        for (std::size_t r = 0; r < children.size(); ++r)
            o << "relay " << r << ":\n" << children[r]->log_tail(1500) << '\n';
        return o.str();
    };

    // The producers: each event in a unit of work with its business row.
    std::mutex m;
    std::vector<std::string> failures; // Catch2 assertions are for this thread only
    std::atomic<int> written{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p)
        threads.emplace_back([&, p] {
            std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(p + 1)));
            letterbox::message_id_generator ids(rng());
            const int mine = w.rows / producers + (p < w.rows % producers ? 1 : 0);
            const std::string insert = "INSERT INTO " + schema.name() +
                                       ".orders(aggregate_id, message_id) VALUES ($1, $2)";
            for (int i = 0; i < mine; ++i) {
                letterbox::outbox_entry e;
                e.msg.id = ids();
                e.msg.type = "order.changed";
                e.msg.exchange = "";
                e.msg.routing_key = queue;
                e.aggregate_type = "order";
                e.aggregate_id =
                    std::to_string(std::uniform_int_distribution<int>(0, w.aggregates - 1)(rng));
                e.msg.body = e.aggregate_id;
                const auto id = letterbox::to_string(e.msg.id);
                std::error_code ec;
                auto u = db.begin(ec);
                if (!ec)
                    (void)u.connection().exec(
                        insert, {pg::param::text(e.aggregate_id), pg::param::text(id)}, ec);
                if (!ec)
                    ec = outbox.add(u, e, std::chrono::system_clock::now());
                if (!ec)
                    ec = u.commit();
                if (ec) {
                    std::lock_guard lock(m);
                    failures.push_back("producer " + std::to_string(p) + ": " + ec.message() +
                                       " (" + db.last_error_message() + ")");
                    return;
                }
                ++written;
            }
        });
    for (auto& t : threads)
        t.join();
    const auto produced = std::chrono::steady_clock::now();
    for (const auto& f : failures)
        UNSCOPED_INFO(f);
    REQUIRE(failures.empty());
    REQUIRE(written == w.rows);

    // Every row consumed: bounded by `limit`, and by a stall of 60 s without a new message.
    std::size_t last = 0;
    auto last_change = std::chrono::steady_clock::now();
    const bool all = kill9::wait_until(
        [&] {
            const auto now = std::chrono::steady_clock::now();
            if (const auto d = consumer.distinct(); d != last) {
                last = d;
                last_change = now;
            }
            return last >= static_cast<std::size_t>(w.rows) || now - last_change > 60s ||
                   std::any_of(children.begin(), children.end(),
                               [](auto& c) { return !c->running(); });
        },
        std::chrono::duration_cast<std::chrono::milliseconds>(limit), 20ms);
    const auto drained = std::chrono::steady_clock::now();
    {
        INFO("consumed " << consumer.distinct() << " of " << w.rows << " rows");
        INFO(relay_logs());
        REQUIRE(all);
        REQUIRE(consumer.distinct() == static_cast<std::size_t>(w.rows));
        for (auto& c : children)
            REQUIRE(c->running()); // relays run until told to stop
    }

    // Stop the relays gracefully; their counters.
    for (auto& c : children)
        c->terminate();
    relay_totals totals;
    for (std::size_t r = 0; r < children.size(); ++r) {
        const auto status = children[r]->wait_for(30s);
        INFO(relay_logs());
        REQUIRE(status.has_value());
        REQUIRE(status->exited_ok());
        const auto c = kill9::read_counters(counter_files[r]);
        REQUIRE(c.count("published") == 1);
        totals.add(c);
    }
    // Whatever a relay published last has reached the consumer: the queue is empty, and
    // nothing is in flight.
    const auto idle = consumer.wait_idle(30s);
    REQUIRE(idle.has_value());
    REQUIRE_FALSE(*idle);
    const auto received = consumer.received();
    CHECK(consumer.shut_down(10s));

    // The outbox: every row published once, none pending, parked or leased.
    std::error_code ec;
    const auto stats = outbox.stats(std::chrono::system_clock::now(), ec);
    REQUIRE_FALSE(ec);
    CHECK(stats.pending == 0);
    CHECK(stats.parked == 0);
    CHECK(stats.published == static_cast<std::size_t>(w.rows));
    std::map<letterbox::message_id, std::pair<std::string, std::uint64_t>> rows;
    for (letterbox::outbox_query q{std::nullopt, 0, 1000};;) {
        const auto page = outbox.list(q, ec);
        REQUIRE_FALSE(ec);
        if (page.empty())
            break;
        for (const auto& row : page) {
            CHECK(row.status == letterbox::outbox_status::published);
            CHECK(row.lease_owner.empty());
            rows.emplace(row.msg.id, std::pair(row.aggregate_id, row.sequence));
        }
        q.after_sequence = page.back().sequence;
    }
    REQUIRE(rows.size() == static_cast<std::size_t>(w.rows));

    // What the consumer saw: every row; per aggregate, first deliveries in sequence order.
    std::set<letterbox::message_id> first_seen;
    std::map<std::string, std::uint64_t> last_sequence; // per aggregate
    std::size_t phantom = 0, out_of_order = 0, redelivered = 0;
    std::string first_disorder;
    for (const auto& s : received) {
        redelivered += s.redelivered ? 1 : 0;
        const auto it = rows.find(s.id);
        if (it == rows.end()) {
            ++phantom;
            continue;
        }
        if (!first_seen.insert(s.id).second)
            continue; // a duplicate: its first delivery was checked
        const auto& [aggregate, sequence] = it->second;
        auto& before = last_sequence[aggregate];
        if (sequence < before) {
            if (out_of_order++ == 0)
                first_disorder = "aggregate " + aggregate + ": sequence " +
                                 std::to_string(sequence) + " first delivered after " +
                                 std::to_string(before);
        }
        before = std::max(before, sequence);
    }
    const std::size_t duplicates = received.size() - first_seen.size() - phantom;
    // The publishes that settled no row: a confirm lost or given up (a transport failure, a
    // lease that ran out with the publish in flight), a mark refused because another relay
    // had taken the row over, a publish abandoned at the stop.
    const auto unsettled_publishes = totals["publish_attempts"] - totals["published"];
    const auto explained = totals["transport_failures"] + totals["leases_expired"] +
                           totals["lease_lost"] + totals["abandoned"] + totals["failed"];

    std::ostringstream summary;
    summary << "postgres relays: " << relays << " relay processes, " << producers
            << " producer threads, " << w.rows << " rows of " << w.aggregates
            << " aggregates; written in " << seconds(produced - started)
            << " s, all consumed after " << seconds(drained - started) << " s ("
            << static_cast<int>(w.rows / seconds(drained - started))
            << " rows/s); published per relay:";
    for (const auto n : totals.published)
        summary << ' ' << n;
    summary << "; " << received.size() << " deliveries, " << duplicates << " duplicates, "
            << redelivered << " flagged redelivered; relays: " << totals["claims"] << " claims of "
            << totals["claimed"] << " rows, " << totals["publish_attempts"] << " publishes, "
            << unsettled_publishes << " settled no row (transport failures "
            << totals["transport_failures"] << ", leases expired " << totals["leases_expired"]
            << ", leases lost " << totals["lease_lost"] << ", abandoned " << totals["abandoned"]
            << ", failed " << totals["failed"] << "), store errors " << totals["store_errors"]
            << "; listener notifications " << totals["listener_notifications"];
    std::cout << summary.str() << std::endl;
    INFO(summary.str());

    CHECK(phantom == 0);
    CHECK(first_seen.size() == static_cast<std::size_t>(w.rows));
    INFO(first_disorder);
    CHECK(out_of_order == 0);
    // Each row was marked published by exactly one relay, and each relay took part.
    CHECK(totals["published"] == static_cast<std::uint64_t>(w.rows));
    for (const auto n : totals.published)
        CHECK(n > 0);
    // Every duplicate is a publish the relays counted as settling no row, and each of those
    // has a counted cause.
    CHECK(duplicates <= unsettled_publishes);
    CHECK(unsettled_publishes <= explained);
    // The listeners woke the relays: every relay connected its listener, and announcements came.
    CHECK(totals["listener_connections"] >= static_cast<std::uint64_t>(relays));
    CHECK(totals["listener_notifications"] > 0);
}

} // namespace integration_postgres_relays
