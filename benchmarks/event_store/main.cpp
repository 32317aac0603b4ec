// SPDX-License-Identifier: BSL-1.0
//
// bench_event_store: event sourcing on SQLite (issue 22), each figure against a baseline
// measured in the same run (the machine is a shared 2-core box: only ratios are stable).
//
//   append      One event per unit of work: sqlite::event_store::append with
//               `expected_version::exactly(n)` on 8 streams in turn, then COMMIT, against raw
//               sqlite3 C calls inserting the same rows (position, stream, version, 16-byte
//               id, type, data, metadata, recorded_at) into the same table, one BEGIN
//               IMMEDIATE ... COMMIT per unit, with the pragmas letterbox's connections run
//               (WAL, synchronous=NORMAL, foreign_keys=ON, busy_timeout). Target: >= 0.8x.
//   append-10   The same with 10 events per unit (one append of 10 events). Target: >= 0.8x.
//   floor       Under each append row: the raw calls running letterbox's SQL, that is the two
//               reads `append` makes before it inserts (the stream's version, the store's last
//               position and time) and the inserts, against the same raw inserts. It splits
//               letterbox's gap into what SQLite charges for those reads and what letterbox's
//               own code adds.
//   load        aggregate_repository::load of one stream of 100, 1,000 and 10,000 events
//               (an account fold that parses each event's JSON), sqlite::event_store and
//               sqlite::snapshot_store on one database: with a snapshot every 50 events, and
//               without snapshots. The baseline is the 100-event stream of the same variant in
//               the same run. Target: flat with snapshots.
//   lag         Projection lag under a steady append load, in-process: one thread appends at
//               `--rate` events/s for `--seconds` (one event per unit, `on_commit` with
//               `runner.waker()`) while a projection_runner runs `async_run` on a thread_pool
//               of one thread, applying each batch to a table of a second SQLite database with
//               its sqlite::checkpoint_store. Each event's lag is `committed_at - recorded_at`
//               from `projection_options::on_batch` (steady_clock's wall_now), where
//               `recorded_at` is the time the append was due (an open loop: see lag_run). The
//               baseline: the same runner, stores and read model, stepped inline from the
//               append's own `on_commit` (`catch_up` on the appender's thread): the same work
//               without the hand-off to the pool. Target: p99 < 10 ms.
//
// Rates use wall time (SQLite's cost includes its write(2) calls). Each row alternates the
// letterbox side and its baseline `--repeat` times (default 5) and reports medians, each with
// the spread of its rounds, and the machine's load at the start and the end (report.hpp). Every
// run checks its result (versions, positions, states, events projected) and exits 1 on a
// mismatch.
//
// Usage: bench_event_store [--events N] [--repeat R] [--rate A] [--seconds S] [--only ROW]
// `--only` runs one row (append, load or lag) and its baseline, to profile it.
#include <letterbox/sqlite.hpp>

#include <letterbox/letterbox.hpp>

#include "../raw_sqlite.hpp"
#include "../report.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <sys/prctl.h>
#include <thread>
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

double micros(std::chrono::nanoseconds d) {
    return std::chrono::duration<double, std::micro>(d).count();
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
    scratch(const scratch&) = delete;
    scratch& operator=(const scratch&) = delete;
    std::string file(const char* name) const { return (dir / name).string(); }
};

// ---- events and the fold ------------------------------------------------------------------

constexpr std::size_t stream_count = 8;

std::string stream_name(std::size_t k) {
    return "account-" + std::to_string(k);
}

std::int64_t amount_at(std::size_t i) {
    return static_cast<std::int64_t>(100 + (i * 7919) % 50000);
}

/// `n` events of an account: time-ordered ids (a default generator, as a user's program has),
/// about 60 bytes of JSON data and 50 of metadata.
std::vector<lb::event_data> make_events(std::size_t n) {
    lb::message_id_generator ids;
    std::vector<lb::event_data> v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        v.push_back(
            {ids(), i % 3 == 2 ? "withdrawn" : "deposited",
             nlohmann::json{{"cents", amount_at(i)}, {"note", "bench-" + std::to_string(i)}}.dump(),
             R"({"correlation_id":"bench","user":"bench-user-0001"})"});
    return v;
}

struct account {
    std::int64_t balance = 0; // cents
    std::uint64_t movements = 0;
    friend bool operator==(const account&, const account&) = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(account, balance, movements)

std::int64_t signed_amount(const std::string& type, const std::string& data) {
    const auto cents = nlohmann::json::parse(data).at("cents").get<std::int64_t>();
    return type == "withdrawn" ? -cents : cents;
}

/// The account fold of example 18: each event's JSON is parsed, as a real fold does.
struct account_fold {
    using state_type = account;
    static constexpr std::uint32_t fold_version = 1;

    void apply(account& a, const lb::recorded_event& e) const {
        a.balance += signed_amount(e.type, e.data);
        ++a.movements;
    }
};

// ---- raw SQLite ---------------------------------------------------------------------------

using bench::exec_or_die;
using bench::prepare_or_die;

// A raw connection to `path` set up as letterbox's connections are (connection.hpp, with the
// defaults of database_options): SQLITE_OPEN_NOMUTEX, busy_timeout 5000 ms, journal_mode=WAL,
// foreign_keys=ON, synchronous=NORMAL.
sqlite3* open_raw(const std::string& path) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                        nullptr) != SQLITE_OK)
        std::exit(1);
    sqlite3_busy_timeout(db, 5000);
    exec_or_die(db, "PRAGMA journal_mode=WAL");
    exec_or_die(db, "PRAGMA foreign_keys=ON");
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

std::int64_t to_micros(lb::store_time t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

// ---- append -------------------------------------------------------------------------------

/// Appends `events` (a multiple of `per_unit`) through sqlite::event_store, `per_unit` events
/// per unit of work, the units going to the 8 streams in turn; returns events per second.
double append_letterbox(const std::vector<lb::event_data>& events, std::size_t per_unit) {
    scratch s("append");
    auto db = lb::sqlite::database::open(s.file("events.db"));
    lb::sqlite::event_store store(db);
    const lb::steady_clock clock;
    std::array<std::uint64_t, stream_count> versions{};
    std::vector<std::string> names;
    for (std::size_t k = 0; k < stream_count; ++k)
        names.push_back(stream_name(k));
    const std::span<const lb::event_data> all(events);
    const std::size_t units = events.size() / per_unit;

    const auto t0 = wall::now();
    for (std::size_t u = 0; u < units; ++u) {
        auto& version = versions[u % stream_count];
        lb::append_result at;
        auto uow = store.begin();
        auto ec = store.append(uow, names[u % stream_count], lb::expected_version::exactly(version),
                               all.subspan(u * per_unit, per_unit), clock.wall_now(), at);
        if (!ec)
            ec = uow.commit();
        if (ec || at.version != version + per_unit || at.position != (u + 1) * per_unit) {
            expect(false, "letterbox append: version and position");
            break;
        }
        version = at.version;
    }
    const double rate = static_cast<double>(events.size()) / seconds_since(t0);
    std::error_code ec;
    expect(store.head_position(ec) == events.size() && !ec, "every event appended");
    return rate;
}

/// The same rows in raw sqlite3 calls, the same units; with `letterbox_sql`, each unit also
/// runs the two reads `event_store::append` makes before its inserts.
double append_raw(const std::vector<lb::event_data>& events, std::size_t per_unit,
                  bool letterbox_sql) {
    scratch s(letterbox_sql ? "append-floor" : "append-raw");
    // letterbox creates the schema (the same event table, constraints and indexes); from here
    // on only raw sqlite3 calls touch the file.
    { auto created = lb::sqlite::database::open(s.file("raw.db")); }
    sqlite3* db = open_raw(s.file("raw.db"));
    sqlite3_stmt* begin = prepare_or_die(db, "BEGIN IMMEDIATE");
    sqlite3_stmt* commit = prepare_or_die(db, "COMMIT");
    sqlite3_stmt* insert = prepare_or_die(
        db, "INSERT INTO letterbox_event (position, stream, version, id, type, data, metadata, "
            "recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    sqlite3_stmt* stream_version =
        prepare_or_die(db, "SELECT max(version) FROM letterbox_event WHERE stream = ?1");
    sqlite3_stmt* last_event = prepare_or_die(
        db, "SELECT position, recorded_at FROM letterbox_event ORDER BY position DESC LIMIT 1");
    std::array<std::int64_t, stream_count> versions{};
    std::vector<std::string> names;
    for (std::size_t k = 0; k < stream_count; ++k)
        names.push_back(stream_name(k));
    const std::size_t units = events.size() / per_unit;
    auto text = [](sqlite3_stmt* st, int i, const std::string& v) {
        sqlite3_bind_text(st, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    };

    const auto t0 = wall::now();
    std::int64_t position = 0;
    for (std::size_t u = 0; u < units; ++u) {
        const auto& name = names[u % stream_count];
        auto& version = versions[u % stream_count];
        const std::int64_t now = to_micros(std::chrono::system_clock::now());
        step_or_die(db, begin);
        if (letterbox_sql) {
            text(stream_version, 1, name);
            if (sqlite3_step(stream_version) != SQLITE_ROW ||
                sqlite3_column_int64(stream_version, 0) != version)
                expect(false, "raw: the stream's version");
            sqlite3_reset(stream_version);
            if (sqlite3_step(last_event) == SQLITE_ROW &&
                sqlite3_column_int64(last_event, 0) != position)
                expect(false, "raw: the last position");
            sqlite3_reset(last_event);
        }
        for (std::size_t j = 0; j < per_unit; ++j) {
            const auto& e = events[u * per_unit + j];
            sqlite3_bind_int64(insert, 1, ++position);
            text(insert, 2, name);
            sqlite3_bind_int64(insert, 3, ++version);
            sqlite3_bind_blob(insert, 4, e.id.data, 16, SQLITE_STATIC);
            text(insert, 5, e.type);
            text(insert, 6, e.data);
            text(insert, 7, e.metadata);
            sqlite3_bind_int64(insert, 8, now);
            step_or_die(db, insert);
        }
        step_or_die(db, commit);
    }
    const double rate = static_cast<double>(events.size()) / seconds_since(t0);
    for (auto* st : {begin, commit, insert, stream_version, last_event})
        sqlite3_finalize(st);
    sqlite3_close(db);
    return rate;
}

// ---- load ---------------------------------------------------------------------------------

using repository =
    lb::aggregate_repository<account_fold, lb::sqlite::event_store, lb::sqlite::snapshot_store>;

constexpr std::array<std::size_t, 3> stream_lengths{100, 1000, 10000};

/// One database with an event store and a snapshot store, holding for each length L a stream
/// `snap-L` written through a repository with a snapshot every 50 events (10 events per unit,
/// each unit loading the aggregate first, as a command does) and a stream `plain-L` of the same
/// events with no snapshot.
struct load_rig {
    scratch dir{"load"};
    lb::sqlite::database db = lb::sqlite::database::open(dir.file("events.db"));
    lb::sqlite::event_store store{db};
    lb::sqlite::snapshot_store snapshots{db};
    repository with_snapshots{store, snapshots, {.snapshot_every = 50}};
    repository without_snapshots{store, snapshots, {.snapshot_every = 0}};
    std::vector<account> expected; // by length

    load_rig() {
        const lb::steady_clock clock;
        for (const auto length : stream_lengths) {
            const auto events = make_events(length);
            account state;
            for (const auto& e : events) {
                state.balance += signed_amount(e.type, e.data);
                ++state.movements;
            }
            expected.push_back(state);
            const std::span<const lb::event_data> all(events);
            const auto snap = "snap-" + std::to_string(length);
            for (std::size_t done = 0; done < length; done += 10) {
                std::error_code ec;
                const auto a = with_snapshots.load(snap, ec);
                expect(!ec && a.version == done, "load: the snapshotted stream's version");
                lb::append_result at;
                auto uow = db.begin();
                ec = with_snapshots.append(uow, a, all.subspan(done, 10), clock.wall_now(), at);
                if (!ec)
                    ec = uow.commit();
                expect(!ec, "load: append with snapshots");
            }
            const auto plain = "plain-" + std::to_string(length);
            for (std::size_t done = 0; done < length; done += 100) {
                lb::append_result at;
                auto uow = db.begin();
                auto ec = store.append(uow, plain, lb::expected_version::exactly(done),
                                       all.subspan(done, 100), clock.wall_now(), at);
                if (!ec)
                    ec = uow.commit();
                expect(!ec, "load: append without snapshots");
            }
        }
    }

    /// Loads the stream of length `stream_lengths[i]` again and again for at least 100 ms (and
    /// at least 3 times); returns microseconds per load and the events the last load folded.
    std::pair<double, std::uint64_t> time_loads(std::size_t i, bool snapshots_on) {
        const auto length = stream_lengths[i];
        const auto name = (snapshots_on ? "snap-" : "plain-") + std::to_string(length);
        auto& repo = snapshots_on ? with_snapshots : without_snapshots;
        std::size_t loads = 0;
        std::uint64_t folded = 0;
        const auto t0 = wall::now();
        while (loads < 3 || wall::now() - t0 < 100ms) {
            std::error_code ec;
            const auto a = repo.load(name, ec);
            ++loads;
            folded = a.events_folded;
            if (ec || a.version != length || !(a.state == expected[i]) ||
                (snapshots_on ? a.snapshot_version == 0 || folded > 50 : folded != length)) {
                expect(false, "load: the state, the version and the events folded");
                break;
            }
        }
        return {seconds_since(t0) * 1e6 / static_cast<double>(loads), folded};
    }
};

// ---- lag ----------------------------------------------------------------------------------

/// The read model: each account's balance, in a table of its own database.
struct balance_projection {
    using unit_of_work_type = lb::sqlite::unit_of_work;

    lb::sqlite::database* db;

    lb::sqlite::unit_of_work begin() { return db->begin(); }

    std::error_code apply(lb::sqlite::unit_of_work& u, const lb::recorded_event& e) {
        std::error_code ec;
        auto st = u.connection().prepare(
            "INSERT INTO balance(account, cents) VALUES (?1, ?2) "
            "ON CONFLICT(account) DO UPDATE SET cents = cents + excluded.cents",
            ec);
        if (ec)
            return ec;
        st->bind_text(1, e.stream);
        st->bind_int64(2, signed_amount(e.type, e.data));
        return st->execute();
    }

    std::error_code reset(lb::sqlite::unit_of_work& u) {
        return u.connection().exec("DELETE FROM balance");
    }
};

struct percentiles {
    double p50 = 0;
    double p99 = 0;
    double max = 0;
};

percentiles percentiles_of(std::vector<double> v) {
    if (v.empty())
        return {};
    std::sort(v.begin(), v.end());
    auto at = [&](std::size_t per_mille) {
        return v[std::min(v.size() - 1, v.size() * per_mille / 1000)];
    };
    return {at(500), at(990), v.back()};
}

struct lag_result {
    percentiles lag;    // committed_at - recorded_at, per event, µs
    percentiles commit; // the append due -> its commit returned, µs
    double events_per_batch = 0;
    double achieved_rate = 0;
};

/// Appends `rate` events a second for `seconds` on this thread and projects them; with
/// `inline_step`, the projection is stepped from each append's `on_commit` on this thread,
/// otherwise `async_run` on a pool of one thread is woken by `runner.waker()`.
lag_result lag_run(std::size_t rate, double seconds, bool inline_step) {
    scratch s(inline_step ? "lag-inline" : "lag");
    auto events_db = lb::sqlite::database::open(s.file("events.db"));
    auto model_db = lb::sqlite::database::open(s.file("model.db"));
    {
        auto u = model_db.begin();
        expect(!u.connection().exec("CREATE TABLE balance(account TEXT PRIMARY KEY, cents "
                                    "INTEGER NOT NULL)") &&
                   !u.commit(),
               "lag: create the read model");
    }
    lb::sqlite::event_store store(events_db);
    lb::sqlite::checkpoint_store checkpoints(model_db);
    balance_projection model{&model_db};
    lb::steady_clock clock;
    boost::asio::thread_pool pool(1);
    const auto n = static_cast<std::size_t>(static_cast<double>(rate) * seconds);
    const auto events = make_events(n);
    // Written by on_batch (on the pool's thread, or this one inline), read after the run.
    std::vector<double> lags;
    lags.reserve(n);
    std::uint64_t batches = 0;
    lb::projection_runner runner(
        pool.get_executor(), store, checkpoints, model, clock,
        {.name = "balances", .batch = 100, .on_batch = [&](const lb::projection_batch& b) {
             ++batches;
             for (const auto& e : b.events)
                 lags.push_back(micros(b.committed_at - e.recorded_at));
         }});
    boost::asio::cancellation_signal stop;
    std::atomic<bool> stopped{false};
    if (!inline_step)
        runner.async_run(boost::asio::bind_cancellation_slot(
            stop.slot(), [&](lb::error_code) { stopped.store(true); }));

    std::array<std::uint64_t, stream_count> versions{};
    std::vector<std::string> names;
    for (std::size_t k = 0; k < stream_count; ++k)
        names.push_back(stream_name(k));
    std::vector<double> commits;
    commits.reserve(n);
    const auto step_inline = [&runner] {
        std::error_code ec;
        runner.catch_up(ec);
        expect(!ec, "lag: inline catch-up");
    };
    // Open loop: append i is due at t0 + i * period, and is recorded at that time, so an append
    // that had to wait for the one before it (its WAL checkpoint, or the inline projection)
    // counts its wait in its lag. Stamping the time it actually started would hide those waits
    // from the inline baseline, whose stalls hold up the appends behind them (coordinated
    // omission). A timer slack of 1 ns keeps the sleep's own overshoot (50 us by default) out of
    // both sides' figures.
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    const auto period = std::chrono::nanoseconds(1'000'000'000 / rate);
    const auto t0 = wall::now();
    const auto wall0 = clock.wall_now();
    std::uint64_t last_position = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const auto due = period * static_cast<std::int64_t>(i);
        std::this_thread::sleep_until(t0 + due); // after a stall, the appends due run at once
        auto& version = versions[i % stream_count];
        lb::append_result at;
        const lb::store_time stamp =
            wall0 + std::chrono::duration_cast<lb::store_time::duration>(due);
        auto uow = store.begin();
        auto ec = store.append(uow, names[i % stream_count], lb::expected_version::exactly(version),
                               std::span(&events[i], 1), stamp, at);
        if (!ec)
            ec = inline_step ? uow.on_commit(step_inline) : uow.on_commit(runner.waker());
        if (!ec)
            ec = uow.commit();
        commits.push_back(micros(clock.wall_now() - stamp));
        if (ec) {
            expect(false, "lag: append");
            break;
        }
        version = at.version;
        last_position = at.position;
    }
    const double achieved = static_cast<double>(n) / seconds_since(t0);
    if (!inline_step) {
        const auto deadline = wall::now() + 10s;
        while (runner.position() < last_position && wall::now() < deadline)
            std::this_thread::sleep_for(1ms);
        // The signal belongs to the runner's strand, where its slot was installed.
        boost::asio::post(runner.get_executor(),
                          [&] { stop.emit(boost::asio::cancellation_type::terminal); });
    }
    pool.join();
    expect(inline_step || stopped.load(), "lag: async_run ended when cancelled");
    expect(runner.position() == n && lags.size() == n, "lag: every event projected once");
    lag_result r;
    r.lag = percentiles_of(lags);
    r.commit = percentiles_of(commits);
    r.events_per_batch = batches ? static_cast<double>(lags.size()) / batches : 0;
    r.achieved_rate = achieved;
    return r;
}

} // namespace

int main(int argc, char** argv) {
    std::size_t events = 20000;
    int repeat = 5;
    std::size_t rate = 2000;
    double seconds = 2;
    std::string only;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--events") == 0)
            events = std::strtoull(argv[i + 1], nullptr, 10);
        else if (std::strcmp(argv[i], "--repeat") == 0)
            repeat = std::atoi(argv[i + 1]);
        else if (std::strcmp(argv[i], "--rate") == 0)
            rate = std::strtoull(argv[i + 1], nullptr, 10);
        else if (std::strcmp(argv[i], "--seconds") == 0)
            seconds = std::strtod(argv[i + 1], nullptr);
        else if (std::strcmp(argv[i], "--only") == 0)
            only = argv[i + 1];
    }
    events = std::max<std::size_t>(events / 10 * 10, 10); // whole units of 10
    rate = std::max<std::size_t>(rate, 1);
    repeat = std::max(repeat, 1);
    const auto runs = [&](const char* row) {
        return only.empty() || only == row;
    };
    std::printf("bench_event_store: %zu events per append round, %d repeats, lag at %zu "
                "appends/s for %.1f s, SQLite %s (WAL, synchronous=NORMAL), %zu streams\n\n",
                events, repeat, rate, seconds, sqlite3_libversion(), stream_count);

    const bench::machine_load load;
    bench::rounds a1, r1, f1, a10, r10, f10;
    std::array<bench::rounds, stream_lengths.size()> snap, plain;
    std::array<std::uint64_t, stream_lengths.size()> snap_folded{}, plain_folded{};
    std::vector<double> lag50, lag99, lagmax, in50, in99, inmax, c50, c99, per_batch, achieved;
    const auto data = runs("append") ? make_events(events) : std::vector<lb::event_data>{};
    std::optional<load_rig> rig;
    if (runs("load"))
        rig.emplace();
    for (int r = 0; r < repeat; ++r) {
        if (runs("append")) {
            // Alternate which side goes first.
            for (const std::size_t per_unit : {std::size_t{1}, std::size_t{10}}) {
                auto& l = per_unit == 1 ? a1 : a10;
                if (r % 2 == 0)
                    l.add(append_letterbox(data, per_unit));
                (per_unit == 1 ? r1 : r10).add(append_raw(data, per_unit, false));
                (per_unit == 1 ? f1 : f10).add(append_raw(data, per_unit, true));
                if (r % 2 != 0)
                    l.add(append_letterbox(data, per_unit));
            }
        }
        if (runs("load")) {
            // Alternate which variant goes first.
            for (int pass = 0; pass < 2; ++pass) {
                const bool on = (pass == 0) == (r % 2 == 0);
                for (std::size_t i = 0; i < stream_lengths.size(); ++i) {
                    const auto [us, folded] = rig->time_loads(i, on);
                    (on ? snap : plain)[i].add(us);
                    (on ? snap_folded : plain_folded)[i] = folded;
                }
            }
        }
        if (runs("lag")) {
            const auto async = lag_run(rate, seconds, false);
            const auto in = lag_run(rate, seconds, true);
            lag50.push_back(async.lag.p50);
            lag99.push_back(async.lag.p99);
            lagmax.push_back(async.lag.max);
            in50.push_back(in.lag.p50);
            in99.push_back(in.lag.p99);
            inmax.push_back(in.lag.max);
            c50.push_back(async.commit.p50);
            c99.push_back(async.commit.p99);
            per_batch.push_back(async.events_per_batch);
            achieved.push_back(async.achieved_rate);
        }
    }

    if (runs("append")) {
        std::printf("%-16s %12s %6s %12s %6s %8s   %s\n", "row (medians)", "letterbox", "spread",
                    "raw inserts", "spread", "ratio", "target");
        auto row = [](const char* name, const bench::rounds& l, const bench::rounds& b,
                      bool target) {
            const double ratio = l.mid() / b.mid();
            std::printf("%-16s %8.0f ev/s %6s %8.0f ev/s %6s %7.2fx   ", name, l.mid(),
                        l.spread().c_str(), b.mid(), b.spread().c_str(), ratio);
            if (target)
                std::printf(">= 0.80x: %s\n", ratio >= 0.8 ? "met" : "NOT met");
            else
                std::printf("raw calls of letterbox's SQL (2 reads + the inserts)\n");
        };
        row("append (1/unit)", a1, r1, true);
        row("  floor", f1, r1, false);
        row("append (10/unit)", a10, r10, true);
        row("  floor", f10, r10, false);
        std::printf("\n");
    }
    if (runs("load")) {
        std::printf("%-16s %14s %6s %7s %8s   %14s %6s %7s %8s\n", "load (medians)",
                    "with snapshots", "spread", "folded", "vs 100", "without", "spread", "folded",
                    "vs 100");
        for (std::size_t i = 0; i < stream_lengths.size(); ++i)
            std::printf("%-16s %11.0f us %6s %7llu %7.2fx   %11.0f us %6s %7llu %7.2fx\n",
                        (std::to_string(stream_lengths[i]) + " events").c_str(), snap[i].mid(),
                        snap[i].spread().c_str(), static_cast<unsigned long long>(snap_folded[i]),
                        snap[i].mid() / snap[0].mid(), plain[i].mid(), plain[i].spread().c_str(),
                        static_cast<unsigned long long>(plain_folded[i]),
                        plain[i].mid() / plain[0].mid());
        const double flat = snap.back().mid() / snap[0].mid();
        std::printf("with snapshots, 10,000 events against 100: %.2fx   flat (<= 1.5x): %s\n\n",
                    flat, flat <= 1.5 ? "met" : "NOT met");
    }
    if (runs("lag")) {
        const double p99 = bench::median(lag99);
        const double base99 = bench::median(in99);
        std::printf("lag (medians of %d rounds, %.0f appends/s achieved, %.1f events per batch)\n",
                    repeat, bench::median(achieved), bench::median(per_batch));
        std::printf("  async_run, woken on commit    p50 %7.0f us   p99 %7.0f us   max %7.0f us\n",
                    bench::median(lag50), p99, bench::median(lagmax));
        std::printf("  inline catch-up in on_commit  p50 %7.0f us   p99 %7.0f us   max %7.0f us\n",
                    bench::median(in50), base99, bench::median(inmax));
        std::printf("  ratio                         p50 %7.2fx      p99 %7.2fx\n",
                    bench::median(lag50) / bench::median(in50), p99 / base99);
        std::printf("  append due -> commit returned p50 %7.0f us   p99 %7.0f us   (async side)\n",
                    bench::median(c50), bench::median(c99));
        std::printf("  p99 < 10 ms: %s\n\n", p99 < 10000 ? "met" : "NOT met");
    }
    load.end();
    return failures == 0 ? 0 : 1;
}
