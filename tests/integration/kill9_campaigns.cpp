// SPDX-License-Identifier: BSL-1.0
// kill -9 campaigns (issue 6): the outbox relay and an idempotent consumer run as real child
// processes (this executable, started again on the hidden cases of kill9_children.cpp) against
// a real store and the real broker (LETTERBOX_AMQP_URL). Each iteration kills one of them with
// SIGKILL 3 to 5 times, at seeded random times and at its failpoints, checks the store after
// every kill, restarts it, and finally drains everything and checks the promise: no message
// lost, no effect applied twice. Broker-level duplicates (a message delivered again after a
// kill) are expected: they are counted and printed.
//
// Each campaign runs on two stores (issue 23), with the same iterations:
// - SQLite files; after each kill, `PRAGMA integrity_check` must say ok;
// - a PostgreSQL schema of its own per iteration (LETTERBOX_POSTGRES_URL); after each kill, the
//   server must answer, must have ended the killed process's sessions (its transactions and
//   locks with them) within 10 s, and the tables must be consistent: every business row has its
//   outbox row, no lease outlives its term (a dead relay's rows come free), no row of an
//   aggregate is published before an earlier one; every effect has its inbox record and the
//   other way round.
//
// 20 iterations per campaign (10 for the PostgreSQL ones, for the CI budget: docs/testing.md);
// 100 with LETTERBOX_EXTENDED=1; LETTERBOX_KILL9_ITERATIONS=n overrides both;
// LETTERBOX_KILL9_ITERATION=i runs iteration i alone; LETTERBOX_KILL9_VERBOSE=1 prints one line
// per iteration. Iteration i's seed is derive_seed(LETTERBOX_SEED, "kill9/<campaign>/<i>") (with
// "postgres/" before the campaign's name on PostgreSQL): a replay repeats its kill plan (points,
// hits, delays, message ids), not the exact interleaving, which real processes, a real server
// and a real broker decide.

#include <letterbox/amqp/transport.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/outbox_store.hpp>
#include <letterbox/postgres/param.hpp>
#include <letterbox/sqlite.hpp>

#include <letterbox/detail/time_column.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox/relay_point.hpp>
#include <letterbox/testing/seed.hpp>
#include <letterbox/topology/queue.hpp>

#include "amqp_broker.hpp"
#include "integration/postgres_server.hpp"
#include "kill9_support.hpp"
#include "support/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace integration_kill9_campaigns {

namespace {

using namespace std::chrono_literals;

/// Messages per iteration.
constexpr int messages = 200;

constexpr std::array<letterbox::relay_point, 5> relay_points{
    letterbox::relay_point::after_claim, letterbox::relay_point::before_publish,
    letterbox::relay_point::after_publish_sent, letterbox::relay_point::after_confirm,
    letterbox::relay_point::after_mark};
constexpr std::array<std::string_view, 2> consumer_points{kill9::consumer_after_effect,
                                                          kill9::consumer_after_commit};

int uniform(std::mt19937_64& rng, int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(rng);
}

/// The driver's own connection to the broker, on the fixture's io_context (which runs only
/// inside its calls): declares each iteration's queue and publishes the consumer campaign's
/// messages.
struct driver_broker {
    amqp_test::amqp_transport_fixture f;

    std::error_code await(const std::function<void(std::function<void(std::error_code)>)>& start) {
        auto result = std::make_shared<std::optional<std::error_code>>();
        start([result](std::error_code ec) { *result = ec; });
        if (!f.run_until([&] { return result->has_value(); }, 30s))
            return make_error_code(letterbox::errc::timed_out);
        return **result;
    }

    /// A fresh queue of this iteration's own (parallel tests never share it). It expires five
    /// minutes after its last use, so a killed driver leaves nothing behind for long.
    std::string declare_queue(letterbox::amqp::transport& t, std::string_view stem) {
        letterbox::topology::queue q;
        q.name = f.unique_name(stem);
        q.durable = false;
        q.arguments.set("x-expires", std::int64_t{300000});
        REQUIRE_FALSE(await([&](auto done) { t.async_declare(q, done); }));
        return q.name;
    }

    void close(letterbox::amqp::transport& t) {
        await([&](auto done) { t.async_close(done); });
    }
};

/// What one iteration did, for failure messages and the campaign's summary.
struct iteration_story {
    std::string campaign;
    int index = 0;
    std::uint64_t seed = 0;
    std::string setup{};
    std::vector<std::string> kills{};

    std::string describe() const {
        std::ostringstream o;
        o << campaign << " iteration " << index << " (derived seed " << seed
          << ", LETTERBOX_SEED=" << letterbox::testing::test_seed() << ")" << setup << ", kills:";
        for (const auto& k : kills)
            o << ' ' << k;
        return o.str();
    }
};

/// The campaign's totals, printed at its end.
struct campaign_totals {
    int iterations = 0;
    int kills = 0;
    int failpoint_kills = 0;
    int random_kills = 0;
    int drained_before_kill = 0;
    std::map<std::string, int> by_point;
    std::size_t deliveries = 0;
    std::size_t broker_duplicates = 0;
    std::size_t redelivered = 0;
    std::size_t max_broker_duplicates = 0;

    void add(const kill9::effect_tally& t) {
        ++iterations;
        deliveries += t.deliveries;
        broker_duplicates += t.broker_duplicates();
        redelivered += t.redelivered;
        max_broker_duplicates = std::max(max_broker_duplicates, t.broker_duplicates());
    }

    void print(const std::string& campaign, std::chrono::steady_clock::duration took) const {
        std::cout << "kill9 " << campaign << ": " << iterations << " iterations of " << messages
                  << " messages, " << kills << " kills (" << failpoint_kills << " at failpoints";
        for (const auto& [point, n] : by_point)
            std::cout << ' ' << point << '=' << n;
        std::cout << "; " << random_kills << " at random times, " << drained_before_kill
                  << " of which found the child already done); 0 lost, 0 duplicate effects; "
                  << "broker-level duplicates: " << broker_duplicates << " of " << deliveries
                  << " deliveries (at most " << max_broker_duplicates << " in one iteration), "
                  << redelivered << " flagged redelivered; "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() / 1000.0
                  << " s" << std::endl;
    }
};

/// Waits until `done()`; gives up when the count `progress()` has not changed for `stall` (a
/// consumer with nothing left to deliver: something was lost) or after `limit`. Returns
/// whether `done()` became true.
template <class Done, class Progress>
bool wait_while_progressing(Done done, Progress progress, std::chrono::milliseconds stall,
                            std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    auto last = progress();
    auto last_change = std::chrono::steady_clock::now();
    while (!done()) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline || now - last_change > stall)
            return false;
        if (const auto p = progress(); p != last) {
            last = p;
            last_change = now;
        }
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

// ---- the stores ------------------------------------------------------------------------------
//
// An iteration's tables, on one store: the business table and the outbox the relays drain, and
// the consumer's inbox, `effects` and `deliveries` (kill9_support.hpp). Both classes have the
// same members; the campaigns are templates over them.

/// On SQLite: two files of the iteration's directory, the outbox's and the consumer's.
class sqlite_tables {
public:
    static constexpr kill9::store_kind kind = kill9::store_kind::sqlite;

    explicit sqlite_tables(test_support::temp_directory& dir)
        : outbox_path_(dir.file("outbox.db"))
        , consumer_path_(dir.file("consumer.db")) {}

    /// The name of a child process (its relay owner).
    std::string name(const std::string& stem) const { return stem; }

    // The outbox, written by the driver (the business service) and drained by the relays.
    void create_outbox() {
        db_.emplace(letterbox::sqlite::database::open(outbox_path_));
        outbox_.emplace(*db_);
        auto uow = db_->begin();
        REQUIRE_FALSE(uow.connection().exec(
            "CREATE TABLE business(id INTEGER PRIMARY KEY, message_id TEXT NOT NULL)"));
        REQUIRE_FALSE(uow.commit());
    }
    /// A business row and its event, in one transaction.
    void write_row(const letterbox::outbox_entry& e) {
        auto uow = db_->begin();
        std::error_code ec;
        auto st = uow.connection().prepare("INSERT INTO business(message_id) VALUES (?1)", ec);
        REQUIRE_FALSE(ec);
        REQUIRE_FALSE(st->bind_text(1, letterbox::to_string(e.msg.id)));
        REQUIRE_FALSE(st->execute());
        st = {};
        REQUIRE_FALSE(outbox_->add(uow, e, std::chrono::system_clock::now()));
        REQUIRE_FALSE(uow.commit());
    }
    letterbox::outbox_stats stats() {
        std::error_code ec;
        auto s = outbox_->stats(std::chrono::system_clock::now(), ec);
        if (ec) // polled: no assertion per call
            throw std::system_error(ec, "outbox stats");
        return s;
    }
    std::map<std::string, std::string> outbox_env() const {
        return {{kill9::env_store, "sqlite"}, {kill9::env_database, outbox_path_}};
    }
    /// After a relay was killed: the file passes `PRAGMA integrity_check`.
    void require_intact_outbox(const iteration_story& story, const std::string&) {
        require_intact(outbox_path_, story);
    }

    // The consumer's database.
    void create_consumer() {
        auto db = letterbox::sqlite::database::open(consumer_path_);
        auto uow = db.begin();
        REQUIRE_FALSE(uow.connection().exec(kill9::consumer_schema));
        REQUIRE_FALSE(uow.commit());
        std::error_code ec;
        reader_ = letterbox::sqlite::connection::open(consumer_path_, {}, ec);
        REQUIRE_FALSE(ec);
    }
    std::map<std::string, std::string> consumer_env() const {
        return {{kill9::env_store, "sqlite"}, {kill9::env_database, consumer_path_}};
    }
    /// Messages applied (distinct effects), and deliveries logged.
    std::int64_t applied() {
        return kill9::scalar(reader_, "SELECT COUNT(DISTINCT message_id) FROM effects");
    }
    std::int64_t delivered() { return kill9::scalar(reader_, "SELECT COUNT(*) FROM deliveries"); }
    /// After a consumer was killed: the file passes `PRAGMA integrity_check`.
    void require_intact_consumer(const iteration_story& story, const std::string&) {
        require_intact(consumer_path_, story);
    }
    kill9::effect_tally tally(const std::set<std::string>& expected) {
        return kill9::tally_effects(consumer_path_, expected);
    }

private:
    /// Every SQLite file must pass `PRAGMA integrity_check` after every kill.
    static void require_intact(const std::string& path, const iteration_story& story) {
        INFO(story.describe());
        INFO(path);
        REQUIRE(kill9::integrity_check(path) == "ok");
    }

    std::string outbox_path_;
    std::string consumer_path_;
    std::optional<letterbox::sqlite::database> db_;
    std::optional<letterbox::sqlite::outbox_store> outbox_;
    letterbox::sqlite::connection reader_;
};

/// On PostgreSQL: one schema of the server of LETTERBOX_POSTGRES_URL per iteration, dropped at
/// its end, with the outbox's and the consumer's tables.
class postgres_tables {
public:
    static constexpr kill9::store_kind kind = kill9::store_kind::postgres;

    explicit postgres_tables(test_support::temp_directory&) {
        auto options = schema_.options();
        options.application_name = "kill9-driver";
        options.max_connections = 2;
        db_.emplace(letterbox::postgres::database::open(test_support::postgres_url(), options));
        reader_ = kill9::postgres_connect("kill9-driver");
    }

    /// The name of a child process: its relay owner and the `application_name` of its
    /// connections, unique on the server (the schema's random digits), so that the sessions of
    /// a killed child can be told from those of other tests.
    std::string name(const std::string& stem) const {
        return stem + "-" + schema_.name().substr(schema_.name().size() - 8);
    }

    void create_outbox() {
        outbox_.emplace(*db_);
        exec("CREATE TABLE " + schema_.name() +
             ".business(id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
             "message_id uuid NOT NULL)");
    }
    /// A business row and its event, in one transaction. Its commit does not wait for the WAL
    /// flush (`synchronous_commit`), which would cost about 4 ms per row: what is killed here is
    /// a relay, never the server, and a commit is visible to the relays at once either way.
    void write_row(const letterbox::outbox_entry& e) {
        auto uow = db_->begin();
        REQUIRE_FALSE(uow.connection().exec("SET LOCAL synchronous_commit TO off"));
        const auto id = letterbox::to_string(e.msg.id);
        std::error_code ec;
        uow.connection().exec("INSERT INTO " + schema_.name() + ".business(message_id) VALUES ($1)",
                              {letterbox::postgres::param::text(id)}, ec);
        REQUIRE_FALSE(ec);
        REQUIRE_FALSE(outbox_->add(uow, e, std::chrono::system_clock::now()));
        REQUIRE_FALSE(uow.commit());
    }
    letterbox::outbox_stats stats() {
        std::error_code ec;
        auto s = outbox_->stats(std::chrono::system_clock::now(), ec);
        if (ec) // polled: no assertion per call
            throw std::system_error(ec, "outbox stats");
        return s;
    }
    std::map<std::string, std::string> outbox_env() const {
        return {{kill9::env_store, "postgres"}, {kill9::env_database, schema_.name()}};
    }
    /// After the relay `owner` was killed: the server answers, has ended its sessions, and the
    /// outbox is consistent. The leases a dead relay held run out within one lease (500 ms,
    /// kill9_children.cpp) of its death: none may end later than now plus a lease.
    void require_intact_outbox(const iteration_story& story, const std::string& owner) {
        const auto latest_lease_end =
            letterbox::detail::to_column(std::chrono::system_clock::now() + 500ms);
        require_sessions_ended(story, owner);
        INFO(story.describe());
        // Committed together or not at all.
        CHECK(count("SELECT count(*) FROM {s}.business b WHERE NOT EXISTS "
                    "(SELECT 1 FROM {s}.letterbox_outbox o WHERE o.message_id = b.message_id)") ==
              0);
        CHECK(count("SELECT (SELECT count(*) FROM {s}.letterbox_outbox) - "
                    "(SELECT count(*) FROM {s}.business)") == 0);
        // A published row holds no lease; no lease outlives its term.
        CHECK(count("SELECT count(*) FROM {s}.letterbox_outbox WHERE status = 1 "
                    "AND (lease_owner <> '' OR published_at IS NULL)") == 0);
        CHECK(count("SELECT count(*) FROM {s}.letterbox_outbox WHERE status = 0 "
                    "AND lease_owner <> '' AND lease_expires_at > $1",
                    letterbox::postgres::param(latest_lease_end)) == 0);
        // No row of an aggregate published while an earlier one is not.
        REQUIRE(count("SELECT count(*) FROM {s}.letterbox_outbox l JOIN {s}.letterbox_outbox e "
                      "ON e.aggregate_type = l.aggregate_type AND e.aggregate_id = l.aggregate_id "
                      "AND e.sequence < l.sequence WHERE l.status = 1 AND e.status <> 1") == 0);
    }

    void create_consumer() { exec(kill9::postgres_consumer_schema(schema_.name())); }
    std::map<std::string, std::string> consumer_env() const {
        return {{kill9::env_store, "postgres"}, {kill9::env_database, schema_.name()}};
    }
    std::int64_t applied() { return count("SELECT count(DISTINCT message_id) FROM {s}.effects"); }
    std::int64_t delivered() { return count("SELECT count(*) FROM {s}.deliveries"); }
    /// After the consumer `owner` was killed: the server answers, has ended its sessions, and
    /// every effect has its inbox record and the other way round (one transaction), once.
    void require_intact_consumer(const iteration_story& story, const std::string& owner) {
        require_sessions_ended(story, owner);
        INFO(story.describe());
        const auto consumer = letterbox::postgres::param::text(kill9::consumer_id);
        CHECK(count("SELECT count(*) FROM {s}.effects e WHERE NOT EXISTS (SELECT 1 FROM "
                    "{s}.letterbox_inbox i WHERE i.consumer_id = $1 AND i.message_id = "
                    "e.message_id)",
                    consumer) == 0);
        CHECK(count("SELECT count(*) FROM {s}.letterbox_inbox i WHERE i.consumer_id = $1 AND "
                    "NOT EXISTS (SELECT 1 FROM {s}.effects e WHERE e.message_id = i.message_id)",
                    consumer) == 0);
        REQUIRE(count("SELECT count(*) - count(DISTINCT message_id) FROM {s}.effects") == 0);
    }
    kill9::effect_tally tally(const std::set<std::string>& expected) {
        return kill9::tally_effects(reader_, schema_.name(), expected);
    }

private:
    /// One integer that `sql` selects, with `{s}` standing for the schema. Throws on failure
    /// (polled in loops).
    template <class... Params>
    std::int64_t count(std::string_view sql, const Params&... params) {
        std::string text;
        for (std::size_t at = 0;;) {
            const auto next = sql.find("{s}", at);
            text += sql.substr(at, next - at);
            if (next == std::string_view::npos)
                break;
            text += schema_.name();
            at = next + 3;
        }
        return kill9::scalar(reader_, text, {params...});
    }

    void exec(const std::string& sql) {
        INFO(sql);
        const auto ec = reader_.exec(sql);
        INFO(reader_.last_error_message());
        REQUIRE_FALSE(ec);
    }

    /// The server answers a new connection, and within 10 s has no session of the killed
    /// child `owner` left (a session would keep its open transaction, and its row locks).
    void require_sessions_ended(const iteration_story& story, const std::string& owner) {
        INFO(story.describe());
        INFO(owner);
        std::optional<letterbox::postgres::connection> fresh;
        try {
            fresh.emplace(kill9::postgres_connect("kill9-driver"));
        } catch (const std::exception& e) {
            FAIL("the server does not answer: " << e.what());
        }
        REQUIRE(kill9::scalar(*fresh, "SELECT 1") == 1);
        const auto sessions = [&] {
            return kill9::scalar(*fresh,
                                 "SELECT count(*) FROM pg_stat_activity WHERE application_name "
                                 "IN ($1, $1 || '-listener')",
                                 {letterbox::postgres::param::text(owner)});
        };
        REQUIRE(kill9::wait_until([&] { return sessions() == 0; }, 10s, 10ms));
    }

    test_support::scratch_schema schema_; // dropped after everything below closed
    std::optional<letterbox::postgres::database> db_;
    std::optional<letterbox::postgres::outbox_store> outbox_;
    letterbox::postgres::connection reader_;
};

std::map<std::string, std::string> with(std::map<std::string, std::string> a,
                                        const std::map<std::string, std::string>& b) {
    a.insert(b.begin(), b.end());
    return a;
}

std::map<std::string, std::string> consumer_env(const std::map<std::string, std::string>& store,
                                                const std::string& owner, const std::string& queue,
                                                int prefetch, int effect_ms,
                                                const std::string& failpoint,
                                                int group_commit = 0) {
    return with({{kill9::env_owner, owner},
                 {kill9::env_queue, queue},
                 {kill9::env_prefetch, std::to_string(prefetch)},
                 {kill9::env_effect_ms, std::to_string(effect_ms)},
                 {kill9::env_failpoint, failpoint},
                 {kill9::env_group_commit, std::to_string(group_commit)}},
                store);
}

/// Runs a consumer with no failpoint until every expected message has had its effect (or no
/// delivery came for a while: something was lost), kills it, checks the store and tallies.
template <class Tables>
kill9::effect_tally drain_and_tally(Tables& tables, const std::string& queue,
                                    const std::set<std::string>& expected, int prefetch,
                                    const std::string& log, const iteration_story& story) {
    const auto owner = tables.name("kill9-consumer-final");
    {
        kill9::child_process consumer(
            kill9::consumer_child_test,
            consumer_env(tables.consumer_env(), owner, queue, prefetch, 0, ""), log);
        // Done when all are applied; given up when nothing was delivered for 5 s (a lost
        // message never comes) or after a minute; the tally then tells what is missing.
        wait_while_progressing(
            [&] {
                return tables.applied() == static_cast<std::int64_t>(expected.size()) ||
                       !consumer.running();
            },
            [&] { return tables.delivered(); }, 5s, 60s);
        INFO(story.describe());
        INFO("final consumer output:\n" << consumer.log_tail());
        REQUIRE(consumer.running()); // it runs until killed
        consumer.kill9();
    }
    tables.require_intact_consumer(story, owner);
    return tables.tally(expected);
}

/// The pass criteria of both campaigns.
void require_exactly_once(const kill9::effect_tally& t, const iteration_story& story) {
    INFO(story.describe());
    INFO(t.describe());
    CHECK(t.lost.empty());
    CHECK(t.duplicated.empty());
    CHECK(t.phantom.empty());
    CHECK(t.effects == t.expected);
    REQUIRE(t.inbox_records == t.expected);
    REQUIRE((t.lost.empty() && t.duplicated.empty() && t.phantom.empty())); // stop at the first
}

/// "kill9/<campaign>/<i>", with "postgres/" before the campaign on PostgreSQL (the SQLite
/// campaigns keep the seeds they always had).
template <class Tables>
std::string seed_name(const std::string& campaign, int index) {
    return std::string("kill9/") +
           (Tables::kind == kill9::store_kind::postgres ? "postgres/" : "") + campaign + "/" +
           std::to_string(index);
}

// ---- the relay campaign ----------------------------------------------------------------------

/// One iteration; returns what happened, in one line.
template <class Tables>
std::string relay_iteration(driver_broker& b, int index, campaign_totals& totals) {
    iteration_story story;
    story.campaign =
        std::string(Tables::kind == kill9::store_kind::postgres ? "postgres " : "") + "relay";
    story.index = index;
    story.seed = letterbox::testing::derive_seed(letterbox::testing::test_seed(),
                                                 seed_name<Tables>("relay", index));
    std::mt19937_64 rng(story.seed);
    test_support::temp_directory dir;
    Tables tables(dir);

    auto transport = b.f.make();
    const auto queue = b.declare_queue(transport, "kill9.relay");
    b.close(transport);

    // The business service: a row and its event, one transaction each.
    tables.create_outbox();
    letterbox::message_id_generator ids(rng());
    std::set<std::string> expected;
    auto write_rows = [&](int count) {
        for (int n = 0; n < count; ++n) {
            letterbox::outbox_entry e;
            e.msg.id = ids();
            e.msg.type = "kill9.row_written";
            e.msg.exchange = "";
            e.msg.routing_key = queue;
            e.msg.body = std::to_string(expected.size());
            e.aggregate_type = "row";
            e.aggregate_id = std::to_string(expected.size());
            tables.write_row(e);
            expected.insert(letterbox::to_string(e.msg.id));
        }
    };
    auto relay_env = [&](const std::string& owner, const std::string& failpoint) {
        return with({{kill9::env_owner, owner},
                     {kill9::env_failpoint, failpoint},
                     {kill9::env_seed, std::to_string(rng())}},
                    tables.outbox_env());
    };

    // The rows arrive in chunks, one before each relay process, so that every process has work.
    const int kills = uniform(rng, 3, 5);
    const int chunk = messages / (kills + 1);
    for (int k = 0; k < kills; ++k) {
        write_rows(chunk);
        const auto before = tables.stats();
        const auto owner =
            tables.name("kill9-relay-" + std::to_string(index) + "-" + std::to_string(k));
        const auto log = dir.file("relay-" + std::to_string(k) + ".log");
        // The first kill of iteration i is at failpoint i mod 5, so that every point is hit in
        // every run of 5 iterations or more; the others are a coin toss.
        const bool at_failpoint = k == 0 || uniform(rng, 0, 1) == 0;
        if (at_failpoint) {
            const auto point = k == 0 ? relay_points[static_cast<std::size_t>(index) % 5]
                                      : relay_points[static_cast<std::size_t>(uniform(rng, 0, 4))];
            // Every pending row passes every point at least once before the relay can finish,
            // so the hit is reached.
            const kill9::failpoint fp{std::string(letterbox::to_string(point)),
                                      static_cast<std::uint64_t>(uniform(
                                          rng, 1, std::max(1, static_cast<int>(before.pending))))};
            story.kills.push_back(fp.to_string());
            kill9::child_process relay(kill9::relay_child_test, relay_env(owner, fp.to_string()),
                                       log);
            const auto status = relay.wait_for(60s);
            INFO(story.describe());
            INFO("relay output:\n" << relay.log_tail());
            REQUIRE(status.has_value());
            REQUIRE(status->killed_by_sigkill()); // it died at its failpoint
            ++totals.failpoint_kills;
            ++totals.by_point[fp.point];
        } else {
            // At a random time once it has published something: it then holds claimed rows and
            // publishes in flight.
            const int delay_ms = uniform(rng, 0, 25);
            kill9::child_process relay(kill9::relay_child_test, relay_env(owner, ""), log);
            const bool working = kill9::wait_until(
                [&] { return tables.stats().published > before.published || !relay.running(); },
                30s);
            relay.wait_for(std::chrono::milliseconds(delay_ms));
            const auto status = relay.kill9();
            INFO(story.describe());
            INFO("relay output:\n" << relay.log_tail());
            REQUIRE(working);
            if (status.killed_by_sigkill()) {
                story.kills.push_back("random:" + std::to_string(delay_ms) + "ms");
            } else {
                REQUIRE(status.exited_ok()); // it drained its rows before the kill came
                story.kills.push_back("random:" + std::to_string(delay_ms) + "ms(done)");
                ++totals.drained_before_kill;
            }
            ++totals.random_kills;
        }
        ++totals.kills;
        tables.require_intact_outbox(story, owner);
    }

    // The last chunk, and a relay that is left alone: it drains the outbox and exits.
    write_rows(messages - kills * chunk);
    const auto last_owner = tables.name("kill9-relay-final");
    {
        kill9::child_process relay(kill9::relay_child_test, relay_env(last_owner, ""),
                                   dir.file("relay-final.log"));
        const auto status = relay.wait_for(60s);
        INFO(story.describe());
        INFO("final relay output:\n" << relay.log_tail());
        REQUIRE(status.has_value());
        REQUIRE(status->exited_ok());
    }
    tables.require_intact_outbox(story, last_owner);
    {
        const auto s = tables.stats();
        INFO(story.describe());
        CHECK(s.pending == 0);
        CHECK(s.parked == 0);
        REQUIRE(s.published == static_cast<std::size_t>(messages));
    }

    // Everything the relays published is consumed once.
    tables.create_consumer();
    const auto tally =
        drain_and_tally(tables, queue, expected, 16, dir.file("consumer.log"), story);
    require_exactly_once(tally, story);
    totals.add(tally);
    return story.describe() + "; " + tally.describe();
}

// ---- the consumer campaign -------------------------------------------------------------------

template <class Tables>
std::string consumer_iteration(driver_broker& b, int index, campaign_totals& totals) {
    iteration_story story;
    story.campaign =
        std::string(Tables::kind == kill9::store_kind::postgres ? "postgres " : "") + "consumer";
    story.index = index;
    story.seed = letterbox::testing::derive_seed(letterbox::testing::test_seed(),
                                                 seed_name<Tables>("consumer", index));
    std::mt19937_64 rng(story.seed);
    test_support::temp_directory dir;
    Tables tables(dir);
    tables.create_consumer();

    // The messages are in the queue before the first consumer starts.
    auto transport = b.f.make();
    const auto queue = b.declare_queue(transport, "kill9.consumer");
    letterbox::message_id_generator ids(rng());
    std::set<std::string> expected;
    std::vector<std::optional<std::error_code>> outcomes(messages);
    for (int n = 0; n < messages; ++n) {
        letterbox::message m;
        m.id = ids();
        m.type = "kill9.work";
        m.routing_key = queue;
        m.body = std::to_string(n);
        expected.insert(letterbox::to_string(m.id));
        transport.async_publish(
            m, [&outcomes, n](std::error_code ec) { outcomes[static_cast<std::size_t>(n)] = ec; });
    }
    REQUIRE(b.f.run_until(
        [&] {
            return std::all_of(outcomes.begin(), outcomes.end(),
                               [](const auto& o) { return o.has_value(); });
        },
        30s));
    for (const auto& o : outcomes)
        REQUIRE_FALSE(*o);
    b.close(transport);

    const int prefetch = uniform(rng, 8, 16);
    const int effect_ms = uniform(rng, 1, 3);
    // Group commit in every other iteration: batches of up to the prefetch, one commit each.
    const int group_commit = index % 2 == 1 ? prefetch : 0;
    story.setup = ", prefetch " + std::to_string(prefetch) + ", effect " +
                  std::to_string(effect_ms) + " ms" +
                  (group_commit > 0 ? ", group commit of up to " + std::to_string(group_commit)
                                    : std::string(", one commit per delivery"));
    const auto applied = [&] {
        return tables.applied();
    };
    const auto delivered = [&] {
        return tables.delivered();
    };

    const int kills = uniform(rng, 3, 5);
    int unreached = 0;
    for (int k = 0; k < kills; ++k) {
        const int remaining = messages - static_cast<int>(applied());
        if (remaining == 0)
            break; // everything was applied before this kill: nothing left to interrupt
        const auto log = dir.file("consumer-" + std::to_string(k) + ".log");
        const auto owner =
            tables.name("kill9-consumer-" + std::to_string(index) + "-" + std::to_string(k));
        const bool at_failpoint = k == 0 || uniform(rng, 0, 1) == 0;
        if (at_failpoint) {
            const auto point = k == 0
                                   ? consumer_points[static_cast<std::size_t>(index) % 2]
                                   : consumer_points[static_cast<std::size_t>(uniform(rng, 0, 1))];
            // Each message not applied yet passes the effect once in this process, and each
            // unit of work commits once: one per message, or one per batch of up to
            // `group_commit`. So a hit up to that many is reached; spread the kills over the work.
            const int units = point == kill9::consumer_after_commit && group_commit > 0
                                  ? remaining / group_commit
                                  : remaining;
            const kill9::failpoint fp{
                std::string(point),
                static_cast<std::uint64_t>(uniform(rng, 1, std::max(1, units / (kills - k + 1))))};
            story.kills.push_back(fp.to_string());
            kill9::child_process consumer(kill9::consumer_child_test,
                                          consumer_env(tables.consumer_env(), owner, queue,
                                                       prefetch, effect_ms, fp.to_string(),
                                                       group_commit),
                                          log);
            // It dies at its failpoint, unless its deliveries dry up first: then messages were
            // lost, which the tally at the end reports (so the run goes on to it).
            const bool ended =
                wait_while_progressing([&] { return !consumer.running(); }, delivered, 5s, 60s);
            const auto status = consumer.kill9();
            INFO(story.describe());
            INFO("consumer output:\n" << consumer.log_tail());
            if (ended) {
                REQUIRE(status.killed_by_sigkill()); // it died at its failpoint
            } else {
                story.kills.back() += "(not reached: no more deliveries)";
                ++unreached;
            }
            ++totals.failpoint_kills;
            ++totals.by_point[fp.point];
        } else {
            // At a random time once it handles deliveries: it then holds up to `prefetch`
            // unacknowledged ones.
            const int delay_ms = uniform(rng, 0, 150);
            story.kills.push_back("random:" + std::to_string(delay_ms) + "ms");
            const auto baseline = delivered();
            kill9::child_process consumer(kill9::consumer_child_test,
                                          consumer_env(tables.consumer_env(), owner, queue,
                                                       prefetch, effect_ms, "", group_commit),
                                          log);
            const bool working = kill9::wait_until(
                [&] { return delivered() > baseline || !consumer.running(); }, 20s);
            consumer.wait_for(std::chrono::milliseconds(delay_ms));
            INFO(story.describe());
            INFO("consumer output:\n" << consumer.log_tail());
            REQUIRE(consumer.running()); // a consumer only ends when killed
            REQUIRE(consumer.kill9().killed_by_sigkill());
            if (!working) { // nothing came: lost, as the tally at the end reports
                story.kills.back() += "(no deliveries)";
                ++unreached;
            }
            ++totals.random_kills;
        }
        ++totals.kills;
        tables.require_intact_consumer(story, owner);
    }

    const auto tally =
        drain_and_tally(tables, queue, expected, prefetch, dir.file("consumer-final.log"), story);
    require_exactly_once(tally, story);
    {
        INFO(story.describe());
        INFO("a consumer found nothing left to deliver before its kill");
        REQUIRE(unreached == 0);
    }
    {
        // The first kill was at a failpoint, with the delivery in hand unacknowledged: the
        // broker delivered it again, flagged.
        INFO(story.describe());
        INFO(tally.describe());
        REQUIRE(tally.redelivered >= 1);
    }
    totals.add(tally);
    return story.describe() + "; " + tally.describe();
}

/// Runs `iteration` kill9::iterations(pr_tier) times (see the top of the file).
template <class Iteration>
void run_campaign(const std::string& name, Iteration iteration, int pr_tier = 20) {
    driver_broker b;
    campaign_totals totals;
    const auto started = std::chrono::steady_clock::now();
    // LETTERBOX_KILL9_ITERATION=i replays iteration i alone (with the LETTERBOX_SEED printed).
    const auto only = kill9::env("LETTERBOX_KILL9_ITERATION");
    const int first = only.empty() ? 0 : std::stoi(only);
    const int n = only.empty() ? kill9::iterations(pr_tier) : first + 1;
    const bool verbose = kill9::env("LETTERBOX_KILL9_VERBOSE") == "1";
    for (int i = first; i < n; ++i) {
        const auto story = iteration(b, i, totals);
        if (verbose)
            std::cout << story << std::endl;
    }
    totals.print(name, std::chrono::steady_clock::now() - started);
    CHECK(totals.iterations == n - first);
}

/// Iterations of the PostgreSQL campaigns in the PR tier (see docs/testing.md, "Measured cost").
constexpr int postgres_pr_iterations = 10;

} // namespace

TEST_CASE("kill9: a relay process killed at random times and at each failpoint, then restarted, "
          "loses nothing and duplicates no effect",
          "[integration][kill9]") {
    run_campaign("relay", relay_iteration<sqlite_tables>);
}

TEST_CASE("kill9: a consumer process holding prefetch-N unacked deliveries, killed at random "
          "times and at each failpoint, then restarted, loses nothing and duplicates no effect",
          "[integration][kill9]") {
    run_campaign("consumer", consumer_iteration<sqlite_tables>);
}

TEST_CASE("kill9: on PostgreSQL, a relay process killed at random times and at each failpoint, "
          "then restarted, loses nothing and duplicates no effect",
          "[integration][kill9][postgres]") {
    run_campaign("postgres relay", relay_iteration<postgres_tables>, postgres_pr_iterations);
}

TEST_CASE("kill9: on PostgreSQL, a consumer process holding prefetch-N unacked deliveries, killed "
          "at random times and at each failpoint, then restarted, loses nothing and duplicates "
          "no effect",
          "[integration][kill9][postgres]") {
    run_campaign("postgres consumer", consumer_iteration<postgres_tables>, postgres_pr_iterations);
}

} // namespace integration_kill9_campaigns
