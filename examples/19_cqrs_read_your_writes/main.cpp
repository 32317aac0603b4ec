// SPDX-License-Identifier: BSL-1.0
//
// Example 19: CQRS with read-your-writes (seed 003, exercise 5).
//
//   command side (commands.db)                          query side (queries.db)
//   load account, decide, append + outbox row --relay--> broker --> consumer: runner.notify()
//                                                                      |
//   query: wait for the append's position <-- woken by -- projection_runner: events -> balance
//
// The command side keeps accounts as event streams (example 18) and publishes each event through
// its outbox. The query side keeps a read model, the balance of each account, in a database of
// its own, updated by a projection that lags behind the events by design: it learns of new
// events from the bus (as a projection in another process would), reads them from the event
// store, and applies them with its checkpoint in one transaction. It never polls.
//
// Each of 300 commands is followed by a query of the account's balance:
// - read at once, the read model may not have the write yet (the lag is real, and counted);
// - read after `runner.async_wait(position, 2s, use_future)`, it must: the wait completes when
//   the projection commits the batch that reaches the append's position, woken by that progress,
//   not by a timer. The program checks that every such read saw its own write.
//
// It prints the measured consistency lag (from each event's append to the projection commit
// that made it visible to queries): p50 and p99, and the projection's metrics as Prometheus
// renders them (letterbox::ops).
//
// The program checks its own outcome and exits non-zero, with `MISMATCH: ...` on stderr, when
// it is wrong. Its databases live in a temporary directory that it removes.
//
// Needs: the sqlite and ops components.
// Run: build/release/examples/example_19_cqrs_read_your_writes
#include <letterbox/letterbox.hpp>
#include <letterbox/ops.hpp>
#include <letterbox/sqlite.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

using namespace letterbox;
using namespace std::chrono_literals;

namespace {

namespace asio = boost::asio;

int failures = 0;
std::mutex failures_mutex;
void check(bool ok, const std::string& what) {
    if (!ok) {
        std::lock_guard lock(failures_mutex);
        std::fprintf(stderr, "MISMATCH: %s\n", what.c_str());
        ++failures;
    }
}

void must(std::error_code ec, const char* what) {
    if (ec)
        throw letterbox::error(ec, what);
}

// Runs `io` until `done()` or 30 s, in slices of at most 20 ms (`io` holds a work guard, so a
// slice waits for work instead of returning at once).
bool run_until(asio::io_context& io, const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        io.restart();
        io.run_for(20ms);
    }
    return done();
}

struct account {
    std::int64_t balance = 0;
    friend bool operator==(const account&, const account&) = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(account, balance)

std::int64_t signed_amount(const recorded_event& e) {
    const auto cents = nlohmann::json::parse(e.data).at("cents").get<std::int64_t>();
    return e.type == "withdrawn" ? -cents : cents;
}

struct account_fold {
    using state_type = account;
    static constexpr std::uint32_t fold_version = 1;
    void apply(account& a, const recorded_event& e) const { a.balance += signed_amount(e); }
};

// The query side's read model: one row per account, in queries.db.
struct balance_projection {
    using unit_of_work_type = sqlite::unit_of_work;
    sqlite::database* db;

    sqlite::unit_of_work begin() { return db->begin(); }
    std::error_code apply(sqlite::unit_of_work& u, const recorded_event& e) {
        std::error_code ec;
        auto st = u.connection().prepare(
            "INSERT INTO balance(account, cents) VALUES (?1, ?2) "
            "ON CONFLICT(account) DO UPDATE SET cents = cents + excluded.cents",
            ec);
        if (ec)
            return ec;
        st->bind_text(1, e.stream);
        st->bind_int64(2, signed_amount(e));
        return st->execute();
    }
    std::error_code reset(sqlite::unit_of_work& u) {
        return u.connection().exec("DELETE FROM balance");
    }
};

// A query: the balance the read model holds now, on a read connection of its own.
std::int64_t query_balance(sqlite::connection& reader, const std::string& account) {
    std::error_code ec;
    auto st = reader.prepare("SELECT cents FROM balance WHERE account = ?1", ec);
    must(ec, "prepare the query");
    st->bind_text(1, account);
    const bool found = st->step(ec);
    must(ec, "query");
    return found ? st->column_int64(0) : 0;
}

double percentile(std::vector<double> values, double p) {
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const auto rank = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
    return values[std::min(rank, values.size() - 1)];
}

} // namespace

int main() {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("letterbox-example-19-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir);
    struct remove_on_exit {
        std::filesystem::path dir;
        ~remove_on_exit() {
            std::error_code ignored;
            std::filesystem::remove_all(dir, ignored);
        }
    } cleanup{dir};

    asio::io_context io; // the broker, the transports, the relay, the consumer
    const auto busy = asio::make_work_guard(io);
    asio::thread_pool relay_store(1); // the relay's SQLite calls, off the I/O thread
    asio::thread_pool query_side(1);  // the projection's SQLite calls
    steady_clock clock;
    message_id_generator ids;

    // The command side.
    auto commands = sqlite::database::open((dir / "commands.db").string());
    sqlite::event_store store(commands);
    sqlite::outbox_store outbox(commands);
    sqlite::snapshot_store snapshots(commands);
    publishing_event_store events(store, outbox,
                                  {.exchange = "accounts", .stream_prefixes = {"account-"}});
    aggregate_repository<account_fold, decltype(events), sqlite::snapshot_store> accounts(
        events, snapshots, {.snapshot_every = 50});

    // The query side.
    auto queries = sqlite::database::open((dir / "queries.db").string());
    {
        auto u = queries.begin();
        must(u.connection().exec("CREATE TABLE balance(account TEXT PRIMARY KEY, cents INTEGER)"),
             "create the read model");
        must(u.commit(), "commit the read model");
    }
    sqlite::checkpoint_store checkpoints(queries);
    balance_projection model{&queries};
    ops::metrics_registry registry;
    ops::letterbox_metrics metrics(registry);
    std::mutex lags_mutex;
    std::vector<double> lags_ms;
    //[runner
    const auto observe = metrics.projection_observer();
    projection_runner runner(
        query_side.get_executor(), store, checkpoints, model, clock,
        {.name = "balances", .batch = 100, .on_batch = [&](const projection_batch& b) {
             observe(b);
             std::lock_guard lock(lags_mutex);
             for (const auto& e : b.events)
                 lags_ms.push_back(
                     std::chrono::duration<double, std::milli>(b.committed_at - e.recorded_at)
                         .count());
         }});
    metrics.watch_projection("balances", runner);
    runner.async_run([](error_code) {});
    //]

    // The bus: the relay publishes the outbox; the query side's consumer wakes the runner.
    in_memory::broker broker(io.get_executor());
    in_memory::transport command_transport(broker, "accounts-service");
    in_memory::transport query_transport(broker, "query-service");
    int declared = 0;
    command_transport.async_declare(
        topology::exchange{.name = "accounts", .type = topology::exchange_type::topic},
        [&](error_code ec) { declared += !ec; });
    command_transport.async_declare(topology::queue{.name = "balances.wake"},
                                    [&](error_code ec) { declared += !ec; });
    command_transport.async_bind(topology::binding{"accounts", "balances.wake", "#"},
                                 [&](error_code ec) { declared += !ec; });
    check(run_until(io, [&] { return declared == 3; }), "the topology is declared");
    //[wake_by_bus
    consumer wake(
        query_transport, [&runner](const message&) { runner.notify(); },
        consumer_options{.consume = {.queue = "balances.wake", .prefetch = 100}});
    //]
    std::string wake_tag;
    wake.async_start([&](error_code ec, std::string tag) {
        check(!ec, "the consumer starts");
        wake_tag = std::move(tag);
    });
    relay_options relay_settings;
    relay_settings.store_executor = relay_store.get_executor();
    outbox_relay<sqlite::outbox_store, in_memory::transport, steady_clock> relay(
        outbox, command_transport, clock, relay_settings);
    bool relay_stopped = false;
    relay.async_run([&](std::error_code) { relay_stopped = true; });
    check(run_until(io, [&] { return !wake_tag.empty(); }), "the consumer started");

    // The commands and their queries, on a thread of their own (the I/O thread runs the bus).
    std::printf("300 commands, each followed by a query of its account\n");
    int stale_at_once = 0, waited = 0, saw_own_write = 0;
    bool done = false;
    std::thread client([&] {
        try {
            std::error_code opened;
            auto reader = sqlite::connection::open((dir / "queries.db").string(),
                                                   sqlite::database_options{}, opened);
            must(opened, "open a read connection");
            std::mt19937 random(19);
            const std::vector<std::string> names{"account-ana", "account-bruno", "account-carla"};
            for (int i = 0; i < 300; ++i) {
                const auto& stream = names[random() % names.size()];
                std::error_code ec;
                auto a = accounts.load(stream, ec);
                must(ec, "load");
                const auto cents = static_cast<std::int64_t>(1 + random() % 20) * 100;
                const bool withdraw = random() % 3 == 0 && a.state.balance >= cents;
                event_data e{ids(),
                             withdraw ? "withdrawn" : "deposited",
                             nlohmann::json{{"cents", cents}}.dump(),
                             {}};
                //[read_your_writes
                append_result at;
                auto uow = commands.begin();
                must(accounts.append(uow, a, std::span(&e, 1), clock.wall_now(), at), "append");
                must(uow.on_commit(relay.waker()), "wake the relay");
                must(uow.commit(), "commit");
                const auto expected = a.state.balance + (withdraw ? -cents : cents);

                if (query_balance(reader, stream) != expected)
                    ++stale_at_once; // the read model lags: this read missed its own write
                // Read-your-writes: wait until the projection has applied position `at.position`.
                runner.async_wait(at.position, 2s, asio::use_future).get(); // throws on timeout
                const auto seen = query_balance(reader, stream);
                //]
                ++waited;
                if (seen == expected)
                    ++saw_own_write;
                check(seen == expected, stream + ": the read after the wait sees its own write");
            }
        } catch (const std::exception& x) {
            check(false, std::string("client: ") + x.what());
        }
        done = true;
    });
    check(run_until(io, [&] { return done; }), "the commands and queries end");
    client.join();

    std::printf("reads at once that missed their own write: %d of 300 (the query side lags by "
                "design)\n",
                stale_at_once);
    std::printf("reads after async_wait that saw their own write: %d of %d\n", saw_own_write,
                waited);
    check(saw_own_write == 300, "every read after the wait saw its own write");
    {
        std::lock_guard lock(lags_mutex);
        check(lags_ms.size() >= 300, "every event's lag was measured");
        std::printf("consistency lag over %zu events: p50 %.2f ms, p99 %.2f ms\n", lags_ms.size(),
                    percentile(lags_ms, 0.50), percentile(lags_ms, 0.99));
    }
    std::istringstream rendered(registry.render());
    for (std::string line; std::getline(rendered, line);)
        if (line.starts_with("letterbox_projection_lag_events") ||
            line.starts_with("letterbox_projection_applied_total") ||
            line.starts_with("letterbox_projection_consistency_lag_seconds_count"))
            std::printf("%s\n", line.c_str());

    // Shut down: the consumer, the relay, the runner.
    bool stopped = false;
    wake.async_shutdown(wake_tag, [&](error_code) { stopped = true; });
    relay.stop();
    check(run_until(io, [&] { return stopped && relay_stopped; }), "the bus stops");
    query_side.stop();
    query_side.join();
    relay_store.join();
    std::printf(failures == 0 ? "all checks passed\n" : "FAILED\n");
    return failures == 0 ? 0 : 1;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   300 commands, each followed by a query of its account
//   reads at once that missed their own write: [0-9]+ of 300
//   reads after async_wait that saw their own write: 300 of 300
//   consistency lag over [0-9]+ events: p50 [0-9.]+ ms, p99 [0-9.]+ ms
//   letterbox_projection_lag_events\{projection="balances"\} 0
//   letterbox_projection_applied_total\{projection="balances"\} [0-9]+
//   letterbox_projection_consistency_lag_seconds_count\{projection="balances"\} [0-9]+
//   all checks passed
